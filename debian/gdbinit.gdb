# pyunwind: the py-bt, py-line, py-list, py-up and py-down commands in every gdb
# (gdb reads the files of its system gdbinit directory at start-up).
source /usr/share/pyunwind/gdb/pyunwind.py
