#!/usr/bin/env python3
"""Read the marker values of a line plot image (a PNG of a matplotlib-style figure with a left
y axis, tick marks left of it, x tick marks under the bottom axis, and one colour per series),
so that a reference taken off a published figure can be reproduced and checked.

  python3 validate/read_plot_markers.py FIGURE.png --y-top 200 [--series orange,blue]

The y scale comes from the image itself: the first and last tick marks on the left axis are 0 and
--y-top. At each x tick, a series' value is the centre of the longest run of that series' colour
in the tick's pixel column (the marker's full height there; the lines joining markers are thinner).
A marker partly hidden by another series' marker (the later one drawn on top) shows a shorter run:
its centre is then taken from the visible edge and the marker's height measured where it is not
hidden (reported as `edge`). One pixel is (y-top / tick span) units, about 0.74 TFLOP/s for the
Megatron figures (271 px for 200). Pure Python (zlib PNG decoding): no image library needed."""
import argparse
import struct
import zlib

COLOURS = {  # matplotlib's default cycle: C0 blue, C1 orange, C2 green
    "blue": lambda r, g, b: r < 90 and 90 < g < 150 and b > 150,
    "orange": lambda r, g, b: r > 200 and 90 < g < 170 and b < 80,
    "green": lambda r, g, b: r < 80 and g > 120 and b < 80,
}


def load_png(path):
    """(width, height, pixel(x, y) -> (r, g, b, a)) of an 8-bit RGBA, non-interlaced PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG file")
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour != 6 or interlace != 0:
                raise SystemExit(f"{path}: expected 8-bit RGBA, non-interlaced")
        elif kind == b"IDAT":
            idat += body
    raw, bpp = zlib.decompress(idat), 4
    stride, rows, prev, p = width * bpp, [], bytearray(width * bpp), 0
    for _ in range(height):
        kind, line = raw[p], bytearray(raw[p + 1:p + 1 + stride])
        p += 1 + stride
        for x in range(stride):  # PNG's five row filters (ISO/IEC 15948, section 9)
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, lambda x, y: tuple(rows[y][4 * x:4 * x + 4])


def runs(values):
    out = []
    for v in values:
        if out and v - out[-1][-1] <= 1:
            out[-1].append(v)
        else:
            out.append([v])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("png")
    ap.add_argument("--y-top", type=float, required=True, help="value of the top y tick")
    ap.add_argument("--series", default="orange,blue", help="colours, comma-separated")
    args = ap.parse_args()
    width, height, px = load_png(args.png)

    def dark(x, y):
        r, g, b, a = px(x, y)
        return a > 128 and r + g + b < 250

    axis_x = next(x for x in range(width) if sum(dark(x, y) for y in range(height)) > height // 3)
    bottom = max(y for y in range(height) if sum(dark(x, y) for x in range(width)) > width // 3)
    y_ticks = [y for y in range(bottom + 1) if dark(axis_x - 4, y)]
    y_zero, y_top = bottom, y_ticks[0]
    per_px = args.y_top / (y_zero - y_top)
    x_ticks = [r[len(r) // 2] for r in runs([x for x in range(axis_x + 1, width) if dark(x, bottom + 4)])]
    print(f"y axis: 0 at row {y_zero}, {args.y_top:g} at row {y_top} ({per_px:.3f} per pixel); "
          f"x ticks at columns {x_ticks}")

    def column_runs(colour, x):
        test = COLOURS[colour]
        return runs([y for y in range(y_top - 20, y_zero) if px(x, y)[3] > 128 and test(*px(x, y)[:3])])

    for colour in args.series.split(","):
        heights = [max(map(len, column_runs(colour, x)), default=0) for x in x_ticks]
        full = max(heights)  # the marker's height where nothing hides it
        values = []
        others = [COLOURS[c] for c in COLOURS if c != colour]

        def under_other(x, run):  # another series' marker ends within 2 px above the run
            return any(px(x, y)[3] > 128 and any(t(*px(x, y)[:3]) for t in others)
                       for y in range(run[0] - 3, run[0]))

        for x in x_ticks:
            found = column_runs(colour, x)
            marker = max(found, key=len, default=None)
            if marker is not None and len(marker) >= full - 1:
                centre, how = (marker[0] + marker[-1]) / 2, ""
            else:  # the top is hidden by a marker drawn over it: centre from the bottom edge
                hidden = [r for r in found if under_other(x, r)]
                if not hidden:
                    values.append("not found")
                    continue
                centre, how = hidden[0][-1] - (full - 1) / 2, " (edge)"
            values.append(f"{(y_zero - centre) * per_px:.1f}{how}")
        print(f"{colour}: " + ", ".join(values))


if __name__ == "__main__":
    main()
