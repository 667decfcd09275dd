"""Builds the kvx package for pip: the CMake target kvx_python_package stages it (the Python
layer, _kvx, libkvx.so.0 and kvx-ucx-probe) in BUILD/python/kvx, and the wheel carries that
directory. BUILD is $KVX_BUILD_DIR, else the repository's build/ (what scripts/build.sh makes);
an existing build is reused, otherwise it is configured and built first, with its progress
shown."""
import os
import subprocess
import sys

from setuptools import setup
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.abspath(os.environ.get("KVX_BUILD_DIR", os.path.join(ROOT, "build")))
STAGED = os.path.join(BUILD, "python", "kvx")


def log(message):
    print(f"kvx setup.py: {message}", file=sys.stderr, flush=True)


def build():
    if not os.path.exists(os.path.join(BUILD, "build.ninja")) and \
            not os.path.exists(os.path.join(BUILD, "Makefile")):
        log(f"configuring {BUILD}")
        subprocess.check_call(["cmake", "-S", ROOT, "-B", BUILD, "-G", "Ninja",
                               "-DCMAKE_BUILD_TYPE=RelWithDebInfo"])
    log(f"building the Python package in {BUILD} (target kvx_python_package)")
    subprocess.check_call(["cmake", "--build", BUILD, "--target", "kvx_python_package"])
    if not any(name.startswith("_kvx") for name in os.listdir(STAGED)):
        raise SystemExit(f"kvx setup.py: no _kvx module in {STAGED}")


class BinaryDistribution(Distribution):
    """The package carries compiled code: the wheel is for this platform."""

    def has_ext_modules(self):
        return True


build()
os.makedirs(os.path.join(BUILD, "python-setup"), exist_ok=True)
setup(
    packages=["kvx", "kvx.integrations"],
    package_dir={"kvx": os.path.relpath(STAGED, HERE),
                 "kvx.integrations": os.path.relpath(os.path.join(STAGED, "integrations"), HERE)},
    package_data={"kvx": ["_kvx*.so", "libkvx.so.0", "kvx-ucx-probe"]},
    distclass=BinaryDistribution,
    zip_safe=False,
    # setuptools' own scratch goes to the build tree, not the source tree.
    options={"build": {"build_base": os.path.join(BUILD, "python-setup")},
             "egg_info": {"egg_base": os.path.relpath(os.path.join(BUILD, "python-setup"), HERE)}},
)
