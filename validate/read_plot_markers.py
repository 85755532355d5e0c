#!/usr/bin/env python3
"""Read the marker values of a line plot image (a PNG of a matplotlib-style figure with a left
y axis, tick marks left of it, x tick marks under the bottom axis, and one colour per series),
so that a reference taken off a published figure can be reproduced and checked.

  python3 validate/read_plot_markers.py FIGURE.png --y-top 200 [--y-bottom 0] [--series orange,blue]

The y scale comes from the image itself: the first and last tick marks on the left axis are
--y-top and --y-bottom (the x axis). The x ticks are read as columns, in order, whatever the axis's
scale (a log or categorical axis has evenly spaced ticks like any other). At each x tick, a series'
value is the centre of the longest run of that series' colour in the tick's pixel column (the
marker's full height there; the lines joining markers are thinner). A marker partly hidden by a
later-drawn series' marker (--drawn) shows a shorter run: its centre is then taken from its visible
end and the marker's height measured where it is not hidden (reported as `edge` or `top edge`).
A marker wholly hidden is placed where the straight lines joining it to its neighbours, fitted to
their visible pixels, meet its column (`lines`). One pixel is (y-top - y-bottom) / tick span
units: about 0.73 TFLOP/s on a 0..200 Megatron figure, 0.36 on a 50..150 one. Pure Python (zlib PNG decoding): no image library needed."""
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
    """Ascending integers grouped into runs of consecutive ones (a gap of one pixel or more splits)."""
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
    ap.add_argument("--y-bottom", type=float, default=0.0,
                    help="value of the bottom y tick, at the x axis (default 0)")
    ap.add_argument("--drawn", default="blue,orange,green",
                    help="colours in drawing order, first drawn first (a later series' marker covers "
                         "an earlier one's; matplotlib draws in plotting order, also the legend's)")
    ap.add_argument("--line-px", type=int, default=8, help="a joining line's most pixel rows")
    ap.add_argument("--debug", action="store_true", help="print each tick column's colour runs")
    ap.add_argument("--series", default="orange,blue", help="colours, comma-separated")
    args = ap.parse_args()
    for option, names in (("--series", args.series), ("--drawn", args.drawn)):
        unknown = [c for c in names.split(",") if c not in COLOURS]
        if unknown:
            ap.error(f"{option}: unknown colour(s) {', '.join(unknown)}; expected {', '.join(COLOURS)}")
    width, height, px = load_png(args.png)

    def dark(x, y):
        r, g, b, a = px(x, y)
        return a > 128 and r + g + b < 400  # the axes are drawn 38 or 93 grey (anti-aliased)

    # the axes are the longest dark column and row (a text line can be darker than a third of the
    # width, the axis 1-2 px thick); the x axis is the lowest row of the longest
    col = [sum(dark(x, y) for y in range(height)) for x in range(width)]
    row = [sum(dark(x, y) for x in range(width)) for y in range(height)]
    axis_x = next(x for x in range(width) if col[x] >= 0.9 * max(col))
    bottom = max(y for y in range(height) if row[y] >= 0.9 * max(row))
    y_ticks = [y for y in range(bottom + 1) if dark(axis_x - 4, y)]
    if not y_ticks or y_ticks[0] >= bottom:
        raise SystemExit(f"{args.png}: no y tick marks left of the axis at column {axis_x}: expected a plot "
                         "with tick marks outside its left axis")
    y_zero, y_top = bottom, y_ticks[0]
    per_px = (args.y_top - args.y_bottom) / (y_zero - y_top)
    x_ticks = [r[len(r) // 2] for r in runs([x for x in range(axis_x + 1, width) if dark(x, bottom + 4)])]
    if not x_ticks:
        raise SystemExit(f"{args.png}: no x tick marks under the axis at row {bottom}: expected a plot with tick "
                         "marks outside its bottom axis")
    print(f"y axis: {args.y_bottom:g} at row {y_zero}, {args.y_top:g} at row {y_top} ({per_px:.3f} per pixel); "
          f"x ticks at columns {x_ticks}")

    def column_runs(colour, x):
        test = COLOURS[colour]
        return runs([y for y in range(y_top - 20, y_zero) if px(x, y)[3] > 128 and test(*px(x, y)[:3])])

    drawn = args.drawn.split(",")
    digits = 1 if per_px > 0.1 else 2  # a tenth of a pixel or so

    def other_colour(colour, x, ys):  # a later-drawn series' colour in any of rows ys of column x
        later = drawn[drawn.index(colour) + 1:] if colour in drawn else []
        return any(px(x, y)[3] > 128 and COLOURS[c](*px(x, y)[:3]) for c in later for y in ys)

    def from_lines(colour, i, line_px):
        """A marker wholly covered: the straight lines joining it to its neighbours' markers, each
        fitted (least squares) to the line's visible pixels between the markers and extended to
        tick i; the mean of the two (or the one) extensions."""
        ends = []
        for j in (i - 1, i + 1):
            if not 0 <= j < len(x_ticks):
                continue
            lo, hi = sorted((x_ticks[i], x_ticks[j]))
            pts = []
            for x in range(lo + 15, hi - 14):  # clear of both markers
                thin = [r for r in column_runs(colour, x) if len(r) <= line_px]
                if len(thin) == 1 and not any(hidden_at(colour, x, thin[0])):
                    pts.append((x, (thin[0][0] + thin[0][-1]) / 2))
            if len(pts) >= 10:
                n = len(pts)
                mx, my = sum(p[0] for p in pts) / n, sum(p[1] for p in pts) / n
                slope = sum((p[0] - mx) * (p[1] - my) for p in pts) / sum((p[0] - mx) ** 2 for p in pts)
                ends.append(my + slope * (x_ticks[i] - mx))
        return sum(ends) / len(ends) if ends else None

    def hidden_at(colour, x, run):  # (top covered, bottom covered) by a later series
        return (other_colour(colour, x, range(run[0] - 3, run[0])),
                other_colour(colour, x, range(run[-1] + 1, run[-1] + 4)))

    for colour in args.series.split(","):
        heights = [max(map(len, column_runs(colour, x)), default=0) for x in x_ticks]
        full = max(heights)  # the marker's height where nothing hides it
        values = []
        for i, x in enumerate(x_ticks):
            found = column_runs(colour, x)
            if args.debug:
                print(f"  {colour} column {x}: runs {[(r[0], r[-1]) for r in found]} (full {full})")
            # a marker whose ends touch no other series is whole (a diamond's anti-aliased tips
            # make it 1-2 px shorter at some columns: its centre is still its value); one that
            # another series' marker covers at one end is centred from its visible end
            def hidden(run):
                return hidden_at(colour, x, run)

            # a short run touching nothing else is a line or the legend's line, not a marker
            found = [r for r in found if len(r) >= full // 2 or any(hidden(r))]
            if not found or all(hidden(max(found, key=len))):
                centre = from_lines(colour, i, args.line_px)
                values.append("not found" if centre is None else
                              f"{args.y_bottom + (y_zero - centre) * per_px:.{digits}f} (lines)")
                continue
            marker = max(found, key=len)
            top_hidden, bottom_hidden = hidden(marker)
            if len(marker) >= full - 2 or not (top_hidden or bottom_hidden):
                centre, how = (marker[0] + marker[-1]) / 2, ""
            elif top_hidden:
                centre, how = marker[-1] - (full - 1) / 2, " (edge)"
            else:
                centre, how = marker[0] + (full - 1) / 2, " (top edge)"
            values.append(f"{args.y_bottom + (y_zero - centre) * per_px:.{digits}f}{how}")
        print(f"{colour}: " + ", ".join(values))


if __name__ == "__main__":
    main()
