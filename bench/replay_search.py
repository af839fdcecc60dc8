#!/usr/bin/python3
"""Replays stored N* searches under other schedules and failure detectors, exactly.

A trial is deterministic and a failure detector only stops it at an evaluation, so the trials
of a search run with every configuration to its own stop (search.cancel_on_success=false)
hold everything needed to count the optimisation steps the same search would cost in another
order, or with a detector that stops earlier: its history of validation losses. The replay
also checks that every tested size keeps its outcome (and so N*).

    bench/replay_search.py runs/X/results.sqlite [more stores] [--projection 1,2,3]
                           [--window 200]

Policies (optimisation steps summed over all searches):
  paper        every configuration of every step to its own stop
  two-workers  two configurations of a step at a time in grid order, the first success
               cancelling the other (induct before the searches shared the workers)
  grid         one configuration of a step at a time, in grid order (searches of other cells
               fill the other workers, so nothing runs beside a step to be cancelled)
  successes    as grid, configurations that succeeded at an earlier size first (induct's order)
With --projection K: the same with the projection rule (training.stall_projection = K over
--window steps) added to the detector the trials were run with.
Debian's /usr/bin/python3 with python3-yaml (installed with python3-torch).
"""
import argparse
import math
import sqlite3

import yaml


def load(paths):
    searches, trials = [], {}
    for path in paths:
        con = sqlite3.connect(path)
        for (value,) in con.execute("select value from outcomes where kind = 'nstar'"):
            v = yaml.safe_load(value)
            if v.get("cancel_on_success", True) is False:
                searches.append(v)
        for spec, result, status, steps in con.execute("select spec, result, status, steps from trials"):
            s, r = yaml.safe_load(spec), yaml.safe_load(result)
            if status in ("cancelled", "error"):
                continue
            cell = yaml.safe_dump(s["cell"], sort_keys=True)
            trials[(cell, s["n"], s["lr"], s["seed"])] = {
                "succeeded": status == "succeeded",
                "steps": steps,
                "history": [(p[0], p[2]) for p in r.get("history", [])],
                "training": s["training"],
            }
    return searches, trials


def projection_stops(window, slack):
    def stops(bests, training):
        now, best = bests[-1]
        then = [b for (s, b) in bests if s <= now - window]
        if not then or best >= then[-1]:
            return bool(then)
        rate = (math.log(then[-1]) - math.log(best)) / window
        remaining = training["max_steps"] - now
        return math.log(best) - slack * rate * remaining > math.log(training["epsilon"])
    return stops


def outcome(trial, rule):
    """(succeeded, steps) of a stored trial with an extra detector rule."""
    if rule is None:
        return trial["succeeded"], trial["steps"]
    best, bests = math.inf, []
    for step, loss in trial["history"]:
        best = min(best, loss)
        bests.append((step, best))
        if best < trial["training"]["epsilon"]:
            return True, step
        if rule(bests, trial["training"]):
            return False, step
    return trial["succeeded"], trial["steps"]


def replay(searches, trials, policy, rule=None):
    total, changed = 0, 0
    for v in searches:
        cell = yaml.safe_dump(v["cell"], sort_keys=True)
        latest_success = {}  # configuration -> index of the step of its latest success
        for index, (n, success) in enumerate(v["steps"]):
            grid = sorted(((lr, seed) for (c, nn, lr, seed) in trials if c == cell and nn == n),
                          key=lambda c: (-c[0], c[1]))  # learning rates descending, as the grids
            results = {c: outcome(trials[(cell, n) + c], rule) for c in grid}
            changed += any(ok for ok, _ in results.values()) != success
            if policy == "paper":
                total += sum(steps for _, steps in results.values())
            elif policy == "two-workers":
                free, runs = [0, 0], []
                for c in grid:
                    w = 0 if free[0] <= free[1] else 1
                    ok, steps = results[c]
                    runs.append((free[w], free[w] + steps, ok))
                    free[w] += steps
                first = min((end for _, end, ok in runs if ok), default=math.inf)
                total += sum(max(0, min(end, first) - start) for start, end, _ in runs)
            else:
                order = grid
                if policy == "successes":
                    order = sorted(grid, key=lambda c: -latest_success.get(c, -1))
                for c in order:
                    ok, steps = results[c]
                    total += steps
                    if ok:
                        latest_success[c] = index
                        break
    return total, changed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("stores", nargs="+")
    parser.add_argument("--projection", default="", help="slack values, e.g. 1,2,3")
    parser.add_argument("--window", type=int, default=200)
    args = parser.parse_args()
    searches, trials = load(args.stores)
    if not searches:
        raise SystemExit("no search with search.cancel_on_success=false in these stores")
    rules = [("as run", None)] + [
        (f"+ projection {k} over {args.window} steps", projection_stops(args.window, float(k)))
        for k in args.projection.split(",") if k]
    policies = ["paper", "two-workers", "grid", "successes"]
    print(f"{len(searches)} searches; optimisation steps (sizes whose outcome changed)")
    print(f"{'detector':36s}" + "".join(f"{p:>20s}" for p in policies))
    for name, rule in rules:
        cells = [replay(searches, trials, p, rule) for p in policies]
        print(f"{name:36s}" + "".join(f"{t:>14d} ({c:3d})" for t, c in cells))


if __name__ == "__main__":
    main()
