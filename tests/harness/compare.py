# compare - the target's own truth against pyunwind's JSON (the schema of the core's issue).
FIELDS = ("function", "qualname", "file", "line", "end_line", "column", "end_column")


def compare(truth, got, fields=FIELDS, limit=20):
    """Mismatches between truth.json (dict) and a pyunwind JSON document (dict) as a list of
    strings; empty when they agree. Threads are matched by thread_id; frames of kind "python"
    are compared innermost first. A truth field that is None (qualname and columns before
    3.11) is not compared. At most @limit mismatches are listed."""
    out = []
    got_threads = dict((t.get("thread_id"), t) for t in got.get("threads", []))
    for tt in truth["threads"]:
        who = "thread %s (%s)" % (tt["thread_id"], tt.get("name"))
        gt = got_threads.get(tt["thread_id"])
        if gt is None:
            out.append("%s: missing" % who)
            continue
        gframes = [f for f in gt.get("frames", []) if f.get("kind", "python") == "python"]
        errors = [f for f in gt.get("frames", []) if f.get("kind") == "error"]
        if len(gframes) != len(tt["frames"]):
            out.append("%s: %d frames, truth has %d%s" % (
                who, len(gframes), len(tt["frames"]),
                " (error frame: %s)" % errors[0].get("reason") if errors else ""))
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
