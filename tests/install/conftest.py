"""Fixtures for tests/install: the npm packages of the Kubernetes schema
validator, and a static binary to stand for bootccm.

Run with Debian's Python: /usr/bin/python3 -m pytest tests/install
BOOTCCM=/path/to/bootccm selects the bootccm binary the image and installer
tests use; without it they build a tiny static stand-in with musl-gcc.
"""

import os
import pathlib

import pytest

from helpers import HERE, require_tool, run

NPM_PACKAGES = ("kubernetes-models", "typescript", "yaml")


@pytest.fixture(scope="session")
def node_modules():
    """tests/install/node_modules, installed with `npm ci` from
    package-lock.json when missing or older than the lock file."""
    require_tool("node", "nodejs")
    nm = HERE / "node_modules"
    stamp = nm / ".package-lock.json"
    lock = HERE / "package-lock.json"
    fresh = stamp.exists() and stamp.stat().st_mtime >= lock.stat().st_mtime
    if not fresh or not all((nm / p / "package.json").exists() for p in NPM_PACKAGES):
        npm = require_tool("npm", "npm")
        run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=HERE, timeout=600)
    for p in NPM_PACKAGES:
        if not (nm / p / "package.json").exists():
            pytest.fail(f"npm ci did not install {p} into {nm}", pytrace=False)
    return nm


STAND_IN_VERSION = "bootccm v0.0.0-stand-in"

STAND_IN_C = r"""
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--version") == 0) {
		puts("%s");
		return 0;
	}
	/* like bootccm --validate: an unknown flag or a broken cloud config
	 * exits 2; with --cloud-provider=static, so does an "inventory:" that
	 * cannot be opened, a relative one resolved against the cloud config's
	 * directory */
	if (argc > 1 && strcmp(argv[1], "--validate") == 0) {
		int is_static = 0;
		for (int i = 2; i < argc; i++)
			if (strcmp(argv[i], "--cloud-provider=static") == 0)
				is_static = 1;
		for (int i = 2; i < argc; i++) {
			char line[256], path[4096];
			const char *cc = argv[i] + 15, *v, *slash;
			FILE *f, *inv;
			int n;
			if (strncmp(argv[i], "--bogus", 7) == 0) {
				fprintf(stderr, "bootccm: unknown flag: %%s\n", argv[i]);
				return 2;
			}
			if (strncmp(argv[i], "--cloud-config=", 15) != 0 ||
			    (f = fopen(cc, "r")) == NULL)
				continue;
			while (fgets(line, sizeof(line), f)) {
				if (strstr(line, "broken")) {
					fprintf(stderr, "bootccm: --validate: %%s:1:1: broken\n", cc);
					return 2;
				}
				v = line + strspn(line, " ");
				if (!is_static || strncmp(v, "inventory:", 10) != 0)
					continue;
				v += 10 + strspn(v + 10, " ");
				n = (int)strcspn(v, " \n");
				if (n == 0)
					continue;
				slash = strrchr(cc, '/');
				if (v[0] == '/' || slash == NULL)
					snprintf(path, sizeof(path), "%%.*s", n, v);
				else
					snprintf(path, sizeof(path), "%%.*s/%%.*s", (int)(slash - cc), cc,
					    n, v);
				if ((inv = fopen(path, "r")) == NULL) {
					fprintf(stderr, "bootccm: --validate: --cloud-provider static: %%s: "
					    "static.inventory: %%s: No such file or directory\n", cc, path);
					return 2;
				}
				fclose(inv);
			}
			fclose(f);
		}
		puts("valid: stand-in");
		return 0;
	}
	/* like bootccm: an unknown --cloud-provider exits 2 naming the known */
	if (argc > 2 && strcmp(argv[1], "check-kubeconfig") == 0 &&
	    strncmp(argv[2], "--cloud-provider=", 17) == 0 &&
	    strcmp(argv[2] + 17, "metadata") != 0 && strcmp(argv[2] + 17, "static") != 0) {
		fprintf(stderr, "bootccm: --cloud-provider \"%%s\": unknown provider; "
		    "known: metadata, static\n", argv[2] + 17);
		return 2;
	}
	if (argc > 2 && strcmp(argv[1], "metadata") == 0 &&
	    strcmp(argv[2], "--format=kubelet-flags") == 0) {
		puts("--provider-id=aws:///eu-west-1a/i-0abc --node-ip=10.0.0.5 "
		     "--node-labels=topology.kubernetes.io/zone=eu-west-1a");
		return 0;
	}
	return 1;
}
""" % STAND_IN_VERSION


class Binary:
    """A bootccm binary: the real one (BOOTCCM) or the static stand-in."""

    def __init__(self, path, real):
        self.path = pathlib.Path(path)
        self.real = real


@pytest.fixture(scope="session")
def bootccm_binary(tmp_path_factory):
    env = os.environ.get("BOOTCCM")
    if env:
        path = pathlib.Path(env)
        if not path.is_file() or not os.access(path, os.X_OK):
            pytest.fail(f"BOOTCCM={env} is not an executable file", pytrace=False)
        return Binary(path.resolve(), True)
    cc = require_tool("musl-gcc", "musl-tools")
    d = tmp_path_factory.mktemp("stand-in")
    (d / "bootccm.c").write_text(STAND_IN_C)
    run([cc, "-static", "-Os", "-o", d / "bootccm", d / "bootccm.c"])
    return Binary(d / "bootccm", False)
