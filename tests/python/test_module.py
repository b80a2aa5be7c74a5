"""The `speculum` Python module against the CLI, the trace reader and the malformed-inputs corpus.

CTest runs it with PYTHONPATH at the module and SPECULUM_CLI, SPECULUM_STUDIO, SPECULUM_TEST_BUNDLES,
SPECULUM_DEFAULT_BUNDLE and SPECULUM_MALFORMED set (tests/CMakeLists.txt).
"""
import json
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
import unittest
import zlib

import numpy as np

import speculum

CLI = os.environ["SPECULUM_CLI"]
BUNDLES = os.environ["SPECULUM_TEST_BUNDLES"]
DEFAULT_BUNDLE = os.environ["SPECULUM_DEFAULT_BUNDLE"]
MALFORMED = os.environ["SPECULUM_MALFORMED"]
STUDIO = os.environ.get("SPECULUM_STUDIO", "")  # empty in builds without the GUI
PROMPT = "a red star above a blue circle"


def read_png(path):
    """8-bit RGB / RGBA non-interlaced PNG pixels as [H, W, 3] uint8 (what Qt writes), without an imaging library."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            up_left = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else up_left)) & 255
        rows.append(bytes(line))
        previous = line
    pixels = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(height, width, channels)
    return pixels[:, :, :3]


class ModuleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.environ["SPECULUM_DRAFT_SIZES"] = "none"  # auto draft sizes run their defaults, as the CLI below does
        cls.engine = speculum.Engine(DEFAULT_BUNDLE, device="cpu", threads=1)
        cls.tiny = speculum.Engine(os.path.join(BUNDLES, "tiny-text"), device="cpu", threads=1)
        cls.tmp = tempfile.mkdtemp()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def cli(self, *args):
        env = dict(os.environ, SPECULUM_DRAFT_SIZES="none")
        return subprocess.run([CLI, *args], check=True, capture_output=True, text=True, env=env)

    def test_info_and_methods(self):
        info = self.engine.info
        self.assertEqual((info.grid_rows, info.grid_cols), (16, 16))
        self.assertTrue(info.text_conditioned)
        self.assertIn("ar", info.methods)
        self.assertIn(info.kernels, ("portable", "avx2", "avx512"))
        methods = {m["name"]: m for m in self.engine.methods()}
        self.assertEqual(set(methods), set(info.methods))
        ssd = {p["name"]: p for p in methods["ssd"]["params"]}
        self.assertTrue(all(p["label"] for p in ssd.values()))
        self.assertTrue(any(p["choices"] for m in methods.values() for p in m["params"]))
        low, high = next(iter(ssd.values()))["range"]
        self.assertLessEqual(low, high)
        self.assertIsNone(self.engine.check_prompt(PROMPT))
        self.assertIn("blorptangle", self.engine.check_prompt("a red blorptangle"))

    def test_generation_equals_the_cli(self):
        png, trace = os.path.join(self.tmp, "cli.png"), os.path.join(self.tmp, "cli.jsonl")
        for method in ("ar", "lisa"):
            self.cli("generate", "--bundle", DEFAULT_BUNDLE, "--prompt", PROMPT, "--seed", "5", "--threads", "1",
                     "--method", method, "--out", png, "--trace", trace)
            result = self.engine.generate(prompt=PROMPT, seed=5, method=method)
            commits = [e for e in speculum.read_trace(trace) if e["type"] == "Commit"]
            cli_tokens = np.full(256, -1, dtype=np.int32)
            for commit in commits:
                for cell, token in zip(commit["cells"], commit["tokens"]):
                    cli_tokens[cell[0] * 16 + cell[1]] = token
            self.assertEqual(result.tokens.dtype, np.int32)
            self.assertEqual(result.tokens.shape, (16, 16))
            np.testing.assert_array_equal(result.tokens.reshape(-1), cli_tokens, err_msg=method)
            self.assertEqual(result.image.shape, (64, 64, 3))
            self.assertEqual(result.image.dtype, np.uint8)
            np.testing.assert_array_equal(result.image, read_png(png), err_msg=method)
            np.testing.assert_array_equal(self.engine.decode(result.tokens), result.image)

    def test_class_bundles_take_a_class_id(self):
        bundle = os.path.join(BUNDLES, "tiny-class")
        engine = speculum.Engine(bundle, device="cpu", threads=1)
        self.assertFalse(engine.info.text_conditioned)
        self.assertGreater(len(engine.info.classes), 1)
        trace = os.path.join(self.tmp, "class.jsonl")
        self.cli("generate", "--bundle", bundle, "--class", "1", "--seed", "2", "--threads", "1",
                 "--out", os.path.join(self.tmp, "class.png"), "--trace", trace)
        result = engine.generate(class_id=1, seed=2)
        cli_tokens = [t for e in speculum.read_trace(trace) if e["type"] == "Commit" for t in e["tokens"]]
        self.assertEqual(result.tokens.reshape(-1).tolist(), cli_tokens)  # ar commits in raster order
        self.assertNotEqual(engine.generate(class_id=0, seed=2).tokens.tolist(), result.tokens.tolist())
        with self.assertRaises(ValueError) as caught:
            engine.generate(class_id=len(engine.info.classes))
        self.assertIn("class", str(caught.exception))

    def test_every_method_runs(self):
        for method in self.engine.info.methods:
            result = self.engine.generate(prompt=PROMPT, seed=1, method=method)
            self.assertFalse(result.cancelled, method)
            self.assertTrue((result.tokens >= 0).all(), method)
            m = result.metrics
            self.assertEqual(m["tokens"], 256, method)
            self.assertGreater(m["nfe"], 0, method)
            self.assertAlmostEqual(m["tau"], 256 / m["nfe"], places=6)
            self.assertGreater(m["wall_ms"], 0)
            if method != "ar":
                self.assertGreater(m["drafted"], 0, method)
                self.assertGreaterEqual(m["acceptance"], 0)

    def test_callbacks_see_the_events_in_order(self):
        seen, previews = [], []
        result = self.engine.generate(prompt=PROMPT, seed=2, method="ssd", on_event=seen.append,
                                      on_preview=previews.append, preview_every=64)
        self.assertEqual(seen, result.events)
        self.assertEqual(seen[0]["type"], "RunBegin")
        self.assertEqual(seen[-1]["type"], "RunEnd")
        steps = [e["step"] for e in seen if e["type"] == "StepBegin"]
        self.assertEqual(steps, sorted(steps))
        committed = sum(len(e["cells"]) for e in seen if e["type"] == "Commit")
        self.assertEqual(committed, 256)
        self.assertGreaterEqual(len(previews), 3)
        self.assertEqual(previews[-1]["committed"], 256)
        self.assertTrue(previews[-1]["known"].all())
        self.assertEqual([p["committed"] for p in previews], sorted(p["committed"] for p in previews))

    def test_cancel_from_a_callback_stops_within_one_step(self):
        commits = []

        def on_event(event):
            if event["type"] == "Commit":
                commits.append(event)
                if len(commits) == 3:
                    self.engine.cancel()

        result = self.engine.generate(prompt=PROMPT, seed=3, method="ar", on_event=on_event)
        self.assertTrue(result.cancelled)
        self.assertLessEqual(len(commits), 4)  # the step that saw the cancel, at most one more
        self.assertEqual(int((result.tokens >= 0).sum()), result.metrics["tokens"])
        self.assertLess(result.metrics["tokens"], 256)
        again = self.engine.generate(prompt=PROMPT, seed=3, method="ar")  # the flag does not outlive its run
        self.assertFalse(again.cancelled)

    def test_ctrl_c_cancels_within_a_step_and_raises(self):
        sent, commits = [], []

        def interrupt():
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)

        def on_event(event):
            if event["type"] == "Commit":
                commits.append(time.monotonic())

        timer = threading.Timer(0.3, interrupt)
        timer.start()
        with self.assertRaises(KeyboardInterrupt):
            for seed in range(1000):
                commits.clear()
                self.engine.generate(prompt=PROMPT, seed=seed, method="ar", on_event=on_event)
        timer.join()
        self.assertLessEqual(sum(t > sent[0] for t in commits), 2)  # the step in flight, at most one more
        again = self.engine.generate(prompt=PROMPT, seed=0, method="ar")  # the engine is fine afterwards
        self.assertFalse(again.cancelled)

    def test_a_callback_error_propagates(self):
        def on_event(event):
            raise ZeroDivisionError("from the callback")

        with self.assertRaises(ZeroDivisionError):
            self.engine.generate(prompt=PROMPT, method="ar", on_event=on_event)

    def test_bad_requests_raise_with_the_engines_words(self):
        cases = [
            (dict(prompt="a red blorptangle"), "blorptangle"),
            (dict(prompt=PROMPT, method="medusa"), "medusa"),
            (dict(prompt=PROMPT, method="ssd", options={"no_such_option": 1}), "no_such_option"),
            (dict(prompt=PROMPT, top_p=1.5), "top-p"),
            (dict(prompt="a red\x01 star"), "control"),
        ]
        for request, words in cases:
            with self.assertRaises(ValueError, msg=request) as caught:
                self.engine.generate(**request)
            self.assertIsInstance(caught.exception, speculum.Error)
            self.assertIn(words, str(caught.exception))
        with self.assertRaises(speculum.Error) as caught:
            speculum.Engine(os.path.join(self.tmp, "no-such-bundle"), device="cpu")
        self.assertIn("no-such-bundle", str(caught.exception))
        with self.assertRaises(ValueError):
            self.engine.decode(np.zeros(10, dtype=np.int32))

    def test_trace_written_in_python_reads_back_and_opens(self):
        result = self.tiny.generate(prompt="red", seed=4, method="sjd")
        path = os.path.join(self.tmp, "python.jsonl")
        speculum.write_trace(path, result.events)
        self.assertEqual(speculum.read_trace(path), result.events)
        if not STUDIO:
            self.skipTest("no studio in this build")
        steps = len({e["step"] for e in result.events if e["type"] == "StepBegin"})
        opened = subprocess.run([STUDIO, "--bundle", os.path.join(BUNDLES, "tiny-text"), "--open", path, "--quit-after", "300"],
                                capture_output=True, text=True, timeout=120, env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))
        self.assertEqual(opened.returncode, 0, opened.stderr)
        self.assertIn("studio: Opened python.jsonl: %d steps" % steps, opened.stderr)

    def test_read_bench_has_the_tables_numbers(self):
        out, csv = os.path.join(self.tmp, "bench.json"), os.path.join(self.tmp, "bench.csv")
        prompts = os.path.join(self.tmp, "prompts.txt")
        with open(prompts, "w") as f:
            f.write("red\nblue\n")
        self.cli("bench", "--bundle", os.path.join(BUNDLES, "tiny-text"), "--methods", "ar,sjd", "--prompts", prompts,
                 "--seeds", "2", "--threads", "1", "--json", out, "--csv", csv)
        bench = speculum.read_bench(out)
        self.assertEqual(bench["methods"], ["ar", "sjd"])
        with open(csv) as f:
            lines = f.read().splitlines()
        header = lines[0].split(",")
        for line, row in zip(lines[1:], bench["rows"]):
            fields = dict(zip(header, line.split(",")))
            self.assertEqual(fields["method"], row["method"])
            self.assertEqual(int(fields["images"]), row["images"])
            self.assertEqual(int(fields["nfe"]), row["nfe"])
            self.assertAlmostEqual(float(fields["tau"]), row["tau"], places=3)
        self.assertIn("| `sjd` | 4 |", bench["markdown"])

    def test_the_malformed_corpus_raises_cleanly(self):
        for name in sorted(os.listdir(os.path.join(MALFORMED, "traces"))):
            with self.assertRaises(speculum.Error, msg=name):
                speculum.read_trace(os.path.join(MALFORMED, "traces", name))
        tiny = os.path.join(BUNDLES, "tiny-text")
        for name in sorted(os.listdir(os.path.join(MALFORMED, "manifests"))):
            bundle = os.path.join(self.tmp, "manifest-" + name)
            shutil.copytree(tiny, bundle)
            shutil.copyfile(os.path.join(MALFORMED, "manifests", name), os.path.join(bundle, "speculum.json"))
            with self.assertRaises(speculum.Error, msg=name) as caught:
                speculum.Engine(bundle, device="cpu")
            self.assertIn("speculum.json", str(caught.exception))
        for name in sorted(os.listdir(os.path.join(MALFORMED, "prompts"))):
            with open(os.path.join(MALFORMED, "prompts", name), "rb") as f:
                prompt = f.read().decode("utf-8", "replace")
            with self.assertRaises(ValueError, msg=name):
                self.tiny.generate(prompt=prompt)
        with self.assertRaises(speculum.Error):
            speculum.write_trace(os.path.join(self.tmp, "bad.jsonl"), [{"type": "NoSuchEvent"}])


if __name__ == "__main__":
    unittest.main()
