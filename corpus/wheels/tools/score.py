"""Scores envcheck against corpus/wheels: score.py REPORTS_DIR, where REPORTS_DIR holds `envcheck -f json`
of each wheel as <wheel file name without .whl>.json and of the environment as env.json."""

import glob
import json
import os
import sys

import tomllib

RANK = {"PASS": 0, "SKIP": 0, "INFO": 1, "WARN": 2, "FAIL": 3, "ERROR": 3}
EC = sys.argv[1]
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
tot = {"right": 0, "false alarm": 0, "miss": 0, "wrong level": 0}
for t in sorted(glob.glob(os.path.join(HERE, "*.toml"))):
    j = tomllib.load(open(t, "rb"))
    if j.get("kind") == "environment":
        stem = "env"
    else:
        stem = j["filename"][:-4]
    p = f"{EC}/{stem}.json"
    if not os.path.exists(p):
        continue
    d = json.load(open(p))
    fs = [f for tg in d["targets"] for f in tg["findings"]]
    worst = {}
    for f in fs:
        g = f["gotcha"]
        worst[g] = max(worst.get(g, 0), RANK[f["status"]])
    probs = []
    expected = {e["gotcha"] for e in j.get("expect", [])}
    may = {m["gotcha"] for m in j.get("may", [])}
    for e in j.get("expect", []):
        got = worst.get(e["gotcha"], 0)
        lvl = [k for k, v in RANK.items() if v == got and k not in ("SKIP", "ERROR")][0]
        if got < 2:
            probs.append(("miss", f"{e['gotcha']} expected {e['level']}, got {lvl}"))
        elif lvl not in e["accept"]:
            probs.append(("wrong level", f"{e['gotcha']} expected {e['accept']}, got {lvl}"))
    for m in j.get("must_not", []):
        if worst.get(m["gotcha"], 0) >= RANK[m["level"]] and m["gotcha"] not in expected:
            probs.append(("false alarm", f"{m['gotcha']} at {m['level']}+: {m['why'][:60]}"))
    for g, r in worst.items():
        if (
            r >= 2
            and g not in expected
            and g not in may
            and not any(m["gotcha"] == g and r >= RANK[m["level"]] for m in j.get("must_not", []))
        ):
            probs.append(("false alarm", f"{g} unexpected at {'WARN' if r == 2 else 'FAIL'}"))
    kind = probs[0][0] if probs else "right"
    tot[kind] += 1
    print(f"{os.path.basename(t)[:60]:60s} {j['verdict']:4s} {kind:12s} {'; '.join(p[1] for p in probs)}")
print(tot)
