# compare - the target's own truth against pyunwind's JSON (the schema of the core's issue).
import re

FIELDS = ("function", "qualname", "file", "line", "end_line", "column", "end_column")


def compare(truth, got, fields=FIELDS, limit=20, allow_kinds=()):
    """Mismatches between truth.json (dict) and a pyunwind JSON document (dict) as a list of
    strings; empty when they agree. Threads are matched by thread_id; frames are compared
    innermost first. The truth holds Python frames only, so a frame of any other kind (an
    "error" frame above all) is a frame the truth does not have, and a mismatch - unless its
    kind is in @allow_kinds (a caller that asked for more, e.g. native frames), in which case
    it is left out before comparing. A truth field that is None (qualname and columns before
    3.11) is not compared. At most @limit mismatches are listed."""
    out = []
    got_threads = dict((t.get("thread_id"), t) for t in got.get("threads", []))
    for tt in truth["threads"]:
        who = "thread %s (%s)" % (tt["thread_id"], tt.get("name"))
        gt = got_threads.get(tt["thread_id"])
        if gt is None:
            out.append("%s: missing" % who)
            continue
        frames = [f for f in gt.get("frames", []) if f.get("kind", "python") not in allow_kinds]
        extra = [(i, f) for i, f in enumerate(frames) if f.get("kind", "python") != "python"]
        for i, f in extra:
            out.append("%s: frame #%d, of kind %s, is not in the truth%s" % (
                who, i, f.get("kind"), ": %s" % f.get("reason") if f.get("reason") else ""))
        gframes = [f for f in frames if f.get("kind", "python") == "python"]
        if len(gframes) != len(tt["frames"]):
            out.append("%s: %d frames, truth has %d" % (who, len(gframes), len(tt["frames"])))
        for i, (tf, gf) in enumerate(zip(tt["frames"], gframes)):
            for k in fields:
                if tf.get(k) is None and k in ("qualname", "end_line", "column", "end_column"):
                    continue
                if tf.get(k) != gf.get(k):
                    out.append("%s frame #%d (%s): %s is %r, truth %r"
                               % (who, i, tf["function"], k, gf.get(k), tf.get(k)))
    extra = set(got_threads) - set(t["thread_id"] for t in truth["threads"])
    if extra:
        out.append("threads not in the truth: %s" % sorted(extra))
    return out[:limit] + (["... %d more" % (len(out) - limit)] if len(out) > limit else [])


def text_frames(out):
    """The Python frames of a text stack: its `#N  File "..."` lines, plus the frames a run of
    repeats folded into `[Previous line repeated N more times]` (as traceback folds them)."""
    return len(re.findall(r'^#\d+ +File "', out, re.M)) + sum(
        int(n) for n in re.findall(r"^ +\[Previous line repeated (\d+) more times?\]$", out,
                                   re.M))
