# pyunwind: the py-bt, py-locals, py-print, py-line, py-list, py-tasks, py-task, py-heap,
# py-up and py-down commands in every gdb (gdb reads the files of its system gdbinit directory at start-up).
# This file is a conffile, so it stays after `apt remove pyunwind` until a purge: it sources
# the adapter only while the package's files are there, and gdb starts silently otherwise.
python
if __import__("os").path.isfile("/usr/share/pyunwind/gdb/pyunwind.py"):
    gdb.execute("source /usr/share/pyunwind/gdb/pyunwind.py")
end
