#!/usr/bin/python3
"""Totals a LibTorch profiler trace (induct_bench --trace FILE) by operation: self time (the
time inside an operation minus the operations it called), calls, and the share of the whole.

    bench/trace_summary.py FILE [--top 30]
"""
import argparse
import collections
import json


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    with open(args.trace) as f:
        events = [e for e in json.load(f) if e.get("ph") == "X"]
    self_us, calls = collections.Counter(), collections.Counter()
    by_thread = collections.defaultdict(list)
    for e in events:
        by_thread[e.get("tid")].append(e)
    total = 0.0
    for thread_events in by_thread.values():
        thread_events.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []  # [end, name, children's time]
        def close(until):
            while stack and stack[-1][0] <= until:
                end, name, child, dur = stack.pop()
                self_us[name] += dur - child
                if stack:
                    stack[-1][2] += dur
        for e in thread_events:
            close(e["ts"])
            if not stack:
                total += e["dur"]
            calls[e["name"]] += 1
            stack.append([e["ts"] + e["dur"], e["name"], 0.0, e["dur"]])
        close(float("inf"))
    print(f"{'operation':45s} {'self ms':>9s} {'share':>6s} {'calls':>7s}")
    for name, us in self_us.most_common(args.top):
        print(f"{name[:45]:45s} {us / 1000:9.2f} {100 * us / total:5.1f}% {calls[name]:7d}")
    print(f"{'all':45s} {total / 1000:9.2f}")


if __name__ == "__main__":
    main()
