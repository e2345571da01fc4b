#!/usr/bin/env python3
"""What a test run left in the surefire/failsafe XML reports, in two short lists: every skipped test with the reason
JUnit recorded (a Requirements message names what is missing), and the slowest test classes. Used by bin/test at the
end of a run and by .ci/run after both tiers. Usage: test-report.py ROOT [--slowest N] [--since EPOCH_SECONDS]
(--since: only the reports written since then, i.e. by this run)."""
import glob
import os
import sys
import xml.etree.ElementTree as ET


def suites(root, since):
    for path in sorted(glob.glob(os.path.join(root, "*", "target", "*-reports", "TEST-*.xml"))):
        if os.path.getmtime(path) < since:
            continue
        try:
            yield path, ET.parse(path).getroot()
        except ET.ParseError as e:
            print(f"test-report: cannot read {path}: {e}", file=sys.stderr)


def main(argv):
    root = argv[1] if len(argv) > 1 else "."
    slowest = int(argv[argv.index("--slowest") + 1]) if "--slowest" in argv else 15
    since = float(argv[argv.index("--since") + 1]) if "--since" in argv else 0
    classes, skipped = [], []
    for path, suite in suites(root, since):
        tier = "IT" if os.sep + "failsafe-reports" + os.sep in path else "unit"
        name = suite.get("name", os.path.basename(path))
        classes.append((float(suite.get("time", "0") or 0), name, tier, int(suite.get("tests", "0") or 0)))
        for case in suite.iter("testcase"):
            s = case.find("skipped")
            if s is not None:
                why = (s.get("message") or (s.text or "").strip() or "no reason recorded").splitlines()[0]
                why = why.removeprefix("org.opentest4j.TestAbortedException: ")
                skipped.append(f"{case.get('classname', name)}.{case.get('name')}: {why}")
    if not classes:
        print("test-report: no surefire/failsafe reports under " + root)
        return 0
    print(f"test-report: {len(classes)} test classes, {sum(c[3] for c in classes)} tests, {len(skipped)} skipped")
    for line in skipped:
        print("  skipped " + line)
    print(f"test-report: the {min(slowest, len(classes))} slowest test classes (seconds, as the reports give them)")
    for t, name, tier, n in sorted(classes, reverse=True)[:slowest]:
        print(f"  {t:8.1f}  {name} ({tier}, {n} tests)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
