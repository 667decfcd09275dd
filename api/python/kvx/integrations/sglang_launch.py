"""SGLang's server with kvx among its transfer backends (sglang_install.py):

    python3 -m kvx.integrations.sglang_launch <sglang.launch_server's arguments> \\
        --disaggregation-mode prefill|decode --disaggregation-transfer-backend kvx

Importing this module installs kvx into SGLang; run as the main module it then runs
sglang.launch_server as SGLang's own command does. It stays the main module, so that every
process SGLang spawns imports it again (as multiprocessing's spawn does) and has kvx too."""
import runpy

from kvx.integrations.sglang_install import install

install()

if __name__ == "__main__":
    runpy.run_module("sglang.launch_server", run_name="__main__")
