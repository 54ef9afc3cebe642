"""Archives and folders in: every unsafe or odd input gets a message, the
rest is still read."""
import io
import os
import tarfile
import unittest
import zipfile
from pathlib import Path

from helpers import LAB_FILES, tmpdir

from cmlgrade import intake, intakeread
from cmlgrade.intake import read_batch, read_roster, read_submission, looks_like_one_submission

GOOD = b"__global__ void k() {}\n"


def make_zip(path: Path, members):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data, *mode in members:
            info = zipfile.ZipInfo(name)
            if mode:
                info.external_attr = mode[0] << 16
            zf.writestr(info, data)
    return path


def make_tar(path: Path, members):
    with tarfile.open(path, "w:gz") as tf:
        for name, data, *kind in members:
            info = tarfile.TarInfo(name)
            if kind:
                info.type = kind[0]
                info.linkname = "/etc/passwd"
                tf.addfile(info)
            else:
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return path


class ArchiveTests(unittest.TestCase):
    def setUp(self):
        self.d = tmpdir(self)

    def test_flat_zip_is_matched_by_name(self):
        z = make_zip(self.d / "alice.zip", [("reduction.cu", GOOD), ("notes.txt", b"hi")])
        s = read_submission(z, LAB_FILES)
        self.assertEqual(s.student, "alice")
        self.assertEqual(s.files, {"04_reduction": {"reduction.cu": GOOD}})
        self.assertIn("notes.txt", s.ignored)

    def test_kit_layout_in_a_tar_prefers_the_lab_folder(self):
        t = make_tar(self.d / "bob.tar.gz", [("kit/labs/06_transpose/transpose.cu", GOOD),
                                             ("kit/old/transpose.cu", b"old\n")])
        s = read_submission(t, LAB_FILES)
        self.assertEqual(s.files["06_transpose"]["transpose.cu"], GOOD)
        self.assertTrue(any("2 copies" in p for p in s.problems))

    def test_dotdot_and_absolute_members_are_refused_and_the_rest_read(self):
        z = make_zip(self.d / "eve.zip", [("../../grader/cmlgrade/score.py", b"x"), ("/etc/evil.cu", b"x"),
                                          ("reduction.cu", GOOD)])
        s = read_submission(z, LAB_FILES)
        self.assertTrue(any("'..'" in p for p in s.problems))
        self.assertTrue(any("absolute" in p for p in s.problems))
        self.assertIn("04_reduction", s.files)

    def test_tar_dotdot_only_grades_nothing(self):
        t = make_tar(self.d / "mallory.tar.gz", [("../reduction.cu", GOOD)])
        s = read_submission(t, LAB_FILES)
        self.assertEqual(s.files, {})
        self.assertTrue(any("refused" in p for p in s.problems))
        self.assertTrue(any("nothing graded" in p for p in s.problems))

    def test_symlinks_hardlinks_and_devices_are_refused(self):
        z = make_zip(self.d / "a.zip", [("reduction.cu", b"/etc/passwd", 0o120777)])
        self.assertTrue(any("symbolic link" in p for p in read_submission(z, LAB_FILES).problems))
        t = make_tar(self.d / "b.tar.gz", [("reduction.cu", b"", tarfile.SYMTYPE),
                                           ("transpose.cu", b"", tarfile.LNKTYPE),
                                           ("banks.cu", b"", tarfile.CHRTYPE)])
        s = read_submission(t, LAB_FILES)
        self.assertEqual(s.files, {})
        text = "\n".join(s.problems)
        self.assertIn("symbolic link", text)
        self.assertIn("hard link", text)
        self.assertIn("not a regular file", text)

    def test_huge_file_is_not_read(self):
        z = make_zip(self.d / "big.zip", [("reduction.cu", b"/" * (intake.MAX_FILE_BYTES + 10))])
        s = read_submission(z, LAB_FILES)
        self.assertEqual(s.files, {})
        self.assertTrue(any("limit" in p for p in s.problems))

    def test_binary_junk_and_empty_source_are_rejected(self):
        z = make_zip(self.d / "junk.zip", [("reduction.cu", b"\x7fELF\x00\x01\x02" * 50), ("transpose.cu", b"  \n")])
        s = read_submission(z, LAB_FILES)
        self.assertEqual(s.files, {})
        text = "\n".join(s.problems)
        self.assertIn("binary data", text)
        self.assertIn("is empty", text)

    def test_empty_archive_and_damaged_archive(self):
        z = make_zip(self.d / "empty.zip", [])
        self.assertTrue(any("empty submission" in p for p in read_submission(z, LAB_FILES).problems))
        bad = self.d / "broken.zip"
        bad.write_bytes(b"PK\x03\x04 not really")
        self.assertTrue(any("not a readable zip" in p for p in read_submission(bad, LAB_FILES).problems))

    def test_misnamed_file_gets_a_suggestion(self):
        z = make_zip(self.d / "c.zip", [("reductions.cu", GOOD)])
        s = read_submission(z, LAB_FILES)
        self.assertTrue(any("did you mean reduction.cu" in p for p in s.problems))
        self.assertEqual(s.files, {})

    def test_the_kits_solutions_copy_is_never_graded(self):
        mine = b"// my own work\n" + GOOD
        z = make_zip(self.d / "kit.zip", [("kit/solutions/04_reduction/reduction.cu", b"// THE REFERENCE\n" + GOOD),
                                          ("kit/labs/04_reduction/reduction.cu", mine)])
        sub = read_submission(z, LAB_FILES)
        self.assertEqual(sub.files["04_reduction"]["reduction.cu"], mine)
        self.assertTrue(any("solutions/" in p and "never graded" in p for p in sub.problems), sub.problems)
        only = make_zip(self.d / "only.zip", [("kit/solutions/04_reduction/reduction.cu", GOOD)])
        self.assertNotIn("04_reduction", read_submission(only, LAB_FILES).files)

    def test_a_bomb_is_refused_by_its_size_before_it_is_expanded(self):
        import bz2
        member = tarfile.TarInfo("zeros.bin")
        member.size = 2 << 30   # 2 GiB of zeros: a few KiB compressed
        raw = io.BytesIO()
        comp = bz2.BZ2Compressor(9)
        raw.write(comp.compress(member.tobuf()))
        for _ in range(16):   # the start of its data (the rest would take minutes to expand)
            raw.write(comp.compress(bytes(1 << 20)))
        raw.write(comp.flush())
        bomb = self.d / "bomb.tar.gz"   # bzip2 under a .tar.gz name
        bomb.write_bytes(raw.getvalue())
        sub = read_submission(bomb, LAB_FILES)
        # refused by the size its header gives (the stream holds only the first 16 MiB: a clock could not tell
        # an expansion from a refusal here, the words can)
        self.assertTrue(any("decompression bomb" in p for p in sub.problems), sub.problems)

    def test_nested_archives_and_backslash_paths_are_looked_into(self):
        inner = io.BytesIO()
        with zipfile.ZipFile(inner, "w") as zf:
            zf.writestr("labs\\06_transpose\\transpose.cu", GOOD)
        z = make_zip(self.d / "outer.zip", [("submission/inner.zip", inner.getvalue())])
        sub = read_submission(z, LAB_FILES)
        self.assertEqual(sub.files.get("06_transpose", {}).get("transpose.cu"), GOOD, sub.problems)

    def test_look_alike_names_always_get_did_you_mean(self):
        z = make_zip(self.d / "look.zip", [("Reduction.cu", GOOD), ("tran\u200bspose.cu", GOOD),
                                           ("b\u00e4nks.cu", GOOD), ("BANK_MODEL.C", GOOD)])
        sub = read_submission(z, LAB_FILES)
        for want in ("reduction.cu", "transpose.cu", "banks.cu", "bank_model.c"):
            self.assertTrue(any(f"did you mean {want}?" in p for p in sub.problems), (want, sub.problems))
        self.assertTrue(any("\\u200b" in p for p in sub.problems), "the invisible character is shown")

    def test_lab_files_after_a_large_member_are_graded_and_the_skip_is_said(self):
        """A core dump larger than the old 256 MiB expansion cap before labs/:
        skipped through (decompressed a piece at a time, never held), the lab
        file after it graded, and the feedback names what was skipped."""
        import tracemalloc

        class Core(io.RawIOBase):   # 300 MiB that compress like a core dump (runs of zeros, some noise)
            def __init__(self, n):
                self.left, self.rnd = n, __import__("random").Random(5)

            def readable(self):
                return True

            def readinto(self, b):
                k = min(len(b), self.left, 1 << 20)
                chunk = bytes(k - 64) + self.rnd.randbytes(64) if k > 64 else bytes(k)
                b[:k] = chunk
                self.left -= k
                return k

        size = 300 << 20
        path = self.d / "core.tar.gz"
        with tarfile.open(path, "w:gz", compresslevel=1) as tf:
            info = tarfile.TarInfo("work/core")
            info.size = size
            tf.addfile(info, io.BufferedReader(Core(size)))
            for name, data in [("work/labs/04_reduction/reduction.cu", GOOD), ("work/notes.txt", b"hi\n")]:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
        self.assertGreater(size, 256 << 20, "past the expansion cap that used to stop here")
        tracemalloc.start()   # never held: a piece at a time (Python's allocations traced, no clock to guess)
        try:
            sub = read_submission(path, LAB_FILES)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        self.assertLess(peak, 64 << 20, f"{peak} bytes held at once for a 300 MiB member")
        self.assertEqual(sub.files.get("04_reduction", {}).get("reduction.cu"), GOOD, sub.problems)
        self.assertTrue(any(p.startswith("work/core: 300 MiB") and "skipped" in p for p in sub.problems), sub.problems)
        self.assertFalse(any("nothing graded" in p or "bomb" in p for p in sub.problems), sub.problems)
        self.assertIn("work/core", sub.ignored)

    def test_a_whole_kit_with_thousands_of_vendored_headers_is_graded(self):
        """More headers than MAX_MEMBERS before labs/ (lowered to 200 here, to
        keep the test fast): they are listed by name (never read), the lab
        file after them graded."""
        from unittest import mock
        self.enterContext(mock.patch.object(intakeread, "MAX_MEMBERS", 200))
        n = intakeread.MAX_MEMBERS + 100
        members = [(f"kit/third_party/cutlass/include/h{i}.h", b"#pragma once\n") for i in range(n)]
        members.append(("kit/labs/06_transpose/transpose.cu", GOOD))
        for make, name in ((make_tar, "kit.tar.gz"), (make_zip, "kit.zip")):
            sub = read_submission(make(self.d / name, members), LAB_FILES)
            self.assertEqual(sub.files.get("06_transpose", {}).get("transpose.cu"), GOOD, (name, sub.problems[:3]))
            self.assertEqual(len([x for x in sub.ignored if x.endswith(".h")]), n, name)
            self.assertFalse(any("not read" in p for p in sub.problems), sub.problems[:3])

    def test_an_archive_of_too_many_entries_stops_and_says_so(self):
        from unittest import mock
        self.enterContext(mock.patch.object(intakeread, "MAX_ENTRIES", 300))   # 200,000 in use: slow to make here
        members = [(f"d/f{i}", b"") for i in range(intakeread.MAX_ENTRIES + 1)] + [("reduction.cu", GOOD)]
        path = self.d / "many.zip"
        with zipfile.ZipFile(path, "w") as zf:
            for name, data in members:
                zf.writestr(name, data)
        sub = read_submission(path, LAB_FILES)
        self.assertTrue(any(f"more than {intakeread.MAX_ENTRIES} entries" in p for p in sub.problems), sub.problems[:3])

    def test_partial_lab_says_which_file_is_missing(self):
        z = make_zip(self.d / "d.zip", [("bank_model.c", b"int bank_of(unsigned a) { return 0; }\n")])
        s = read_submission(z, LAB_FILES)
        self.assertTrue(any("banks.cu not submitted" in p for p in s.problems))


class FolderAndBatchTests(unittest.TestCase):
    def setUp(self):
        self.d = tmpdir(self)

    def test_folder_with_symlink_is_refused(self):
        sub = self.d / "carol"
        (sub / "labs" / "04_reduction").mkdir(parents=True)
        (sub / "labs" / "04_reduction" / "reduction.cu").write_bytes(GOOD)
        os.symlink("/etc/passwd", sub / "transpose.cu")
        s = read_submission(sub, LAB_FILES)
        self.assertIn("04_reduction", s.files)
        self.assertNotIn("06_transpose", s.files)
        self.assertTrue(any("symbolic link" in p for p in s.problems))
        self.assertTrue(looks_like_one_submission(sub, LAB_FILES))

    def test_batch_with_roster(self):
        batch = self.d / "class"
        batch.mkdir()
        make_zip(batch / "alice.zip", [("reduction.cu", GOOD)])
        (batch / "bob").mkdir()
        (batch / "bob" / "transpose.cu").write_bytes(GOOD)
        (batch / "stray.txt").write_text("x")
        roster = self.d / "roster.csv"
        roster.write_text("student_id,name\nalice,A\nbob,B\ndave,D\n")
        self.assertFalse(looks_like_one_submission(batch, LAB_FILES))
        b = read_batch(batch, LAB_FILES, read_roster(roster))
        self.assertEqual([s.student for s in b.submissions], ["alice", "bob", "dave"])
        self.assertTrue(b.submissions[2].missing)
        self.assertTrue(any("stray.txt" in p for p in b.problems))

    def test_roster_columns(self):
        r = self.d / "r.csv"
        r.write_text("Email,Name\nzoe@uni.edu,Z\n")
        self.assertEqual(read_roster(r), ["zoe"])
        r.write_text("x1\nx2\n")
        self.assertEqual(read_roster(r), ["x1", "x2"])
        # a header an LMS export writes is a header, never a student named "student"
        for head in ("student", "Student ID", "Student-Id", "User"):
            r.write_text(f"name,{head}\nZoe Z,zoe\nAl A,al\n")
            self.assertEqual(read_roster(r), ["zoe", "al"], head)
        # a column of ids wins over a "Student" column of names (an LMS gradebook export)
        r.write_text("Student,ID,Section\nZoe Z,zoe,1\n")
        self.assertEqual(read_roster(r), ["zoe"])


class StudentTreeTests(unittest.TestCase):
    def test_the_tree_has_what_cmake_adds_and_nothing_secret(self):
        from cmlgrade.buildtree import make_student_tree
        kit = tmpdir(self)
        (kit / "CMakeLists.txt").write_text("add_subdirectory(common)\nadd_subdirectory(slides)\n"
                                            "add_subdirectory(grader)\n")
        for d in ("common", "labs/04_reduction", "slides", "submissions/bob", "solutions/04_reduction", "grader"):
            (kit / d).mkdir(parents=True)
        (kit / "slides" / "CMakeLists.txt").write_text("# decks\n")
        (kit / "submissions" / "bob" / "reduction.cu").write_text("bob's work\n")
        (kit / "labs" / "04_reduction" / "reduction.cu").write_text("skeleton\n")
        (kit / "solutions" / "04_reduction" / "reduction.cu").write_text("the answer\n")
        (kit / "solutions" / "04_reduction" / "mistakes.toml").write_text("x\n")
        (kit / "solutions" / "04_reduction" / "feedback.toml").write_text("x\n")
        src = make_student_tree(kit, tmpdir(self), {"04_reduction": {"reduction.cu": b"mine\n"}})
        self.assertTrue((src / "slides" / "CMakeLists.txt").is_file())   # a folder cmake adds
        self.assertFalse((src / "submissions").exists())                  # other students' work
        self.assertFalse((src / "solutions").exists())   # no reference, no catalogue: the grading edition has none
        self.assertFalse((src / "grader" / "tests").exists())
        self.assertEqual((src / "labs" / "04_reduction" / "reduction.cu").read_text(), "mine\n")

    def test_a_submissions_tree_is_configured_as_the_grading_edition(self):
        """What the tree is comes from -DKIT_EDITION, never from which files are
        there (issue 25: an empty grader/tests used to say it)."""
        from cmlgrade import build
        from cmlgrade.buildtree import GRADING_EDITION
        seen = []

        class Exe:
            def run(self, argv, **kw):
                seen.append(argv)
                from cmlgrade.sandbox import ProcResult
                return ProcResult(argv, 0, "", "", False, 0.1)
        d = tmpdir(self)
        build.configure(Exe(), d / "src", d / "build", "90", 60, [], GRADING_EDITION)
        build.configure(Exe(), d / "kit", d / "ref", "90", 60, [])
        self.assertIn("-DKIT_EDITION=grading", seen[0])
        self.assertFalse([a for a in seen[1] if a.startswith("-DKIT_EDITION")], "the kit's own: as it says")


if __name__ == "__main__":
    unittest.main()
