# 64-bit Arm targets read on this machine: Debian's arm64 interpreters (tools/pythons arm64,
# installed by make pythons) under qemu-aarch64; their qemu cores read by the CLI, gdb-multiarch
# and lldb, and live targets through gdb-multiarch on qemu's gdb stub.
.PHONY: test-arm
test-arm: all $(BUILD)/values-probe
	@nice /usr/bin/python3 tests/e2e/test_arm.py -j 2
