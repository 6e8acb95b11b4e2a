# pyunwind_build - the in-tree PEP 517 build backend of pyproject.toml: `pip install .` builds
# the C library with make and packs the `pyunwind` Python package (python/pyunwind, with the
# binding it shares with the debugger adapters, and libpyunwind.so) into a wheel. It
# needs nothing but the standard library and the C toolchain, so it works with no network and
# no setuptools (pip's isolated build installs no requirements: there are none).
import base64
import hashlib
import io
import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile

NAME = "pyunwind"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _version():
    with open(os.path.join(ROOT, "python", "pyunwind", "__init__.py")) as f:
        for line in f:
            if line.startswith("__version__"):
                return line.split("=", 1)[1].strip().strip("\"'")
    raise RuntimeError("no __version__ in python/pyunwind/__init__.py")


def _tag():
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    if _native_built:
        # The native module is this interpreter's: so is the wheel.
        impl = "cp%d%d" % sys.version_info[:2]
        abi = sysconfig.get_config_var("SOABI") or ""
        abi = "%s%s" % (impl, "t" if "t-" in abi.split("cpython-")[-1][:4] else "")
        return "%s-%s-%s" % (impl, abi, plat)
    return "py3-none-" + plat


_native_built = []
NATIVE_SOURCE = os.path.join(ROOT, "python", "pyunwind", "_native.c")


def native_name():
    return "_native" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")


def build_native(outdir):
    """Compiles the package's native module (python/pyunwind/_native.c) for the running
    interpreter into @outdir; returns its path, or None when it cannot be built here (no
    Python.h: the package then builds its objects with ctypes). Headers are looked for where
    sysconfig says, then in $PYUNWIND_PYTHON_INCLUDE (a directory list)."""
    dirs = [sysconfig.get_paths().get("include"), sysconfig.get_paths().get("platinclude")]
    dirs += os.environ.get("PYUNWIND_PYTHON_INCLUDE", "").split(os.pathsep)
    dirs = [d for d in dirs if d and os.path.isdir(d)]
    if not any(os.path.exists(os.path.join(d, "Python.h")) for d in dirs):
        return None
    os.makedirs(outdir, exist_ok=True)
    out = os.path.join(outdir, native_name())
    cc = os.environ.get("CC", "cc")
    cmd = [cc, "-shared", "-fPIC", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror",
           "-Wno-missing-field-initializers", "-Wno-cast-function-type",
           ] + ["-I" + d for d in dirs] + [NATIVE_SOURCE, "-o", out + ".tmp"]
    if subprocess.run(cmd, stdout=sys.stderr).returncode != 0:
        return None
    os.replace(out + ".tmp", out)
    return out


def _metadata():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
            "Summary: Python stacks of live processes and core dumps, read from memory\n"
            "Requires-Python: >=3.8\nLicense: see the source\n"
            "Description-Content-Type: text/markdown\n\n%s" % (NAME, _version(), readme))


def _dist_info():
    return "%s-%s.dist-info" % (NAME, _version())


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, _dist_info())
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(d, "WHEEL"), "w") as f:
        f.write(_wheel_file())
    return _dist_info()


def _wheel_file():
    return ("Wheel-Version: 1.0\nGenerator: pyunwind_build\nRoot-Is-Purelib: false\n"
            "Tag: %s\n" % _tag())


def package_files():
    """(path in the package, file here) of everything an installed `pyunwind` holds; the
    library must have been built."""
    pkg = os.path.join(ROOT, "python", "pyunwind")
    out = [(n, os.path.join(pkg, n)) for n in sorted(os.listdir(pkg))
           if n.endswith(".py") or n == "py.typed"]
    out.append(("libpyunwind.so", os.path.join(ROOT, "build", "libpyunwind.so")))
    out += [(os.path.basename(p), p) for p in _native_built]
    return out


def _build_library():
    subprocess.check_call(["make", "-C", ROOT, "--no-print-directory", "build/libpyunwind.so"])


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _build_library()
    native = build_native(os.path.join(ROOT, "build", "pyext-wheel"))
    del _native_built[:]
    if native:
        _native_built.append(native)
    name = "%s-%s-%s.whl" % (NAME, _version(), _tag())
    path = os.path.join(wheel_directory, name)
    records = []

    def add(zf, arcname, data, mode=0o644):
        info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        records.append("%s,sha256=%s,%d" % (arcname, digest.decode(), len(data)))

    with zipfile.ZipFile(path, "w") as zf:
        for arc, src in package_files():
            with open(src, "rb") as f:
                add(zf, "%s/%s" % (NAME, arc), f.read(),
                    0o755 if arc.endswith(".so") else 0o644)
        di = _dist_info()
        add(zf, di + "/METADATA", _metadata().encode("utf-8"))
        add(zf, di + "/WHEEL", _wheel_file().encode())
        records.append(di + "/RECORD,,")
        info = zipfile.ZipInfo(di + "/RECORD", date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = 0o100644 << 16
        zf.writestr(info, "\n".join(records) + "\n")
    return name


SDIST_PATHS = ("Makefile", "README.md", "pyproject.toml", "core", "mk", "gdb", "lldb", "python",
               "tools", "doc")


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, _version())
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tf:
        for p in SDIST_PATHS:
            full = os.path.join(ROOT, p)
            if os.path.exists(full):
                tf.add(full, arcname="%s/%s" % (base, p),
                       filter=lambda ti: None if "__pycache__" in ti.name else ti)
        data = _metadata().encode("utf-8")
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    return name


if __name__ == "__main__":
    # make: `python pyunwind_build.py native OUTDIR` builds the native module for that python
    # (nothing, and status 0, when its headers are missing).
    if len(sys.argv) == 3 and sys.argv[1] == "native":
        print(build_native(sys.argv[2]) or "no Python.h for %s: the ctypes path will serve"
              % sys.executable)
    else:
        sys.exit("usage: pyunwind_build.py native OUTDIR")
