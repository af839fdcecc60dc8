"""The Python package against the binary it wraps: a run's tables as DataFrames equal the
store's values, its events as they were written, a cut line skipped and said, and the nstar
and kappa tables of a stored study. Run by ctest (test_python) with INDUCT_BINARY and
INDUCT_SOURCE_DIR set; exits 77 (skipped) without pandas."""
import os
import shutil
import sqlite3
import sys
import tempfile
import unittest
import warnings
from pathlib import Path

try:
    import pandas as pd
except ImportError:
    print("pandas is not installed (scripts/setup.sh installs python3-pandas): skipped")
    sys.exit(77)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import induct  # noqa: E402

SOURCE = Path(os.environ.get("INDUCT_SOURCE_DIR", Path(__file__).resolve().parents[2]))


class RunAndLoad(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="induct-python-"))
        cls.out = cls.tmp / "tiny"
        cls.results = induct.run(SOURCE / "tests/fixtures/studies/tiny.yaml", out=cls.out)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_trials_equal_the_store(self):
        trials = self.results.trials
        self.assertEqual(len(trials), 4)
        self.assertTrue(pd.api.types.is_float_dtype(trials["lr"]))
        self.assertTrue(pd.api.types.is_integer_dtype(trials["steps"]))
        db = sqlite3.connect(self.out / "results.sqlite")
        stored = dict(db.execute("SELECT key, best_loss FROM trials"))
        self.assertEqual(dict(zip(trials["trial"], trials["best_loss"])), stored)
        self.assertEqual(len(self.results.histories),
                         db.execute("SELECT count(*) FROM histories").fetchone()[0])
        self.assertTrue(self.results.nstar.empty)  # a train study has no N*

    def test_events_as_written(self):
        events = list(induct.events(self.out, follow=True))
        self.assertEqual(events[0]["event"], "run_started")
        self.assertEqual(events[-1]["event"], "run_ended")
        self.assertEqual(events[-1]["state"], "finished")
        names = [e["event"] for e in events]
        self.assertEqual(names.count("trial_started"), 4)
        self.assertEqual(names.count("trial_ended"), 4)
        frame = induct.events_frame(self.out)
        curves = frame[frame.event == "evaluation"]
        self.assertEqual(len(curves), names.count("evaluation"))
        self.assertEqual(set(curves["trial"]), set(self.results.trials["trial"]))

    def test_a_cut_line_is_skipped_and_said(self):
        copy = self.tmp / "cut"
        copy.mkdir(exist_ok=True)
        text = (self.out / "events.jsonl").read_bytes()
        (copy / "events.jsonl").write_bytes(text + b'{"event": "trial_st')
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            events = list(induct.events(copy))
        self.assertEqual(len(events), text.count(b"\n"))
        self.assertTrue(any("its last line is cut (19 bytes)" in str(w.message) for w in caught))

    def test_a_folder_without_a_store_is_refused(self):
        with self.assertRaises(induct.InductError):
            induct.load(self.tmp / "nothing")


class StoredStudy(unittest.TestCase):
    def test_nstar_and_kappa_of_a_stored_study(self):
        with tempfile.TemporaryDirectory(prefix="induct-python-store-") as tmp:
            shutil.copy(SOURCE / "tests/fixtures/stores/v1.sqlite", Path(tmp) / "results.sqlite")
            r = induct.load(tmp)
            db = sqlite3.connect(Path(tmp) / "results.sqlite")
            stored = {k: (bool(l), n) for k, l, n in db.execute(
                "SELECT key, learned, nstar FROM outcomes WHERE kind = 'nstar'")}
            self.assertEqual(len(r.nstar), len(stored))
            for _, row in r.nstar.iterrows():
                learned, nstar = stored[row["outcome"]]
                self.assertEqual(bool(row["learned"]), learned)
                if learned:
                    self.assertEqual(row["nstar"], nstar)
                else:
                    self.assertTrue(pd.isna(row["nstar"]))
            self.assertFalse(r.kappa.empty)
            self.assertIn("kappa", r.kappa.columns)


if __name__ == "__main__":
    unittest.main()
