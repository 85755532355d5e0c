"""Running the trainsim binary from the validate scripts: a scenario's points as JSON."""
import json
import os
import subprocess
import tempfile


def run(trainsim, scenario):
    """The points of `trainsim run SCENARIO --format json --no-wall-time`."""
    out = subprocess.run([trainsim, "run", scenario, "--format", "json", "--no-wall-time"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["points"]


def run_with_points(trainsim, scenario, points):
    """The scenario's document with `points` in place of its own, run. Written beside the scenario
    so its relative topology paths still resolve, and removed afterwards."""
    doc = json.load(open(scenario))
    doc["points"] = points
    with tempfile.NamedTemporaryFile("w", suffix=".json", dir=os.path.dirname(scenario), delete=False) as fh:
        json.dump(doc, fh)
    try:
        return run(trainsim, fh.name)
    finally:
        os.unlink(fh.name)
