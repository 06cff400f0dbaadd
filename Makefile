# Dossier: `make run` starts the one-machine setup, `make test` runs the whole suite (see README.md).
#
# Both work on a fresh clone: they create .venv with pip (uv and poetry would skip the local CPU torch wheel and
# download a CUDA build) and reinstall only when a pyproject.toml changed. `make run` installs only what the server
# needs (the base dependencies and the agent package without extras); `make test` and `make lint` add the rest.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
MANAGE := $(BIN)/python manage.py

# Where `make run` listens; the Procfile reads DOSSIER_BIND.
BIND ?= 127.0.0.1:8000
# Seconds each server has after Ctrl-C (SIGTERM) to stop by itself before it gets SIGKILL.
STOP_TIMEOUT ?= 30
# Extra arguments for pytest, e.g. `make test PYTEST_ARGS="tests/test_settings.py -x"`.
PYTEST_ARGS ?=

# Two install stamps, each named after a hash of every pyproject.toml it installed, so editing one, or the agent
# package gaining its pyproject.toml, gives new names and one reinstall:
# - the runtime stamp (`make run`, `make prepare`): the base dependencies and the agent package without extras; the
#   server imports only `dossier_agent.contract` (numpy and the standard library), never torch;
# - the full stamp (`make test`, `make lint`, `make messages`, `make install`): the dev extra (pytest, Playwright,
#   ruff, torch…) and the agent's torch and load-generator extras, so the agent's tests run here too. It implies the
#   runtime one.
INSTALL_INPUTS := pyproject.toml $(wildcard agents/pyproject.toml)
INSTALL_HASH := $(shell cat $(INSTALL_INPUTS) | sha256sum | cut -c1-16)
RUNTIME_STAMP := $(VENV)/.dossier-runtime-$(INSTALL_HASH)
FULL_STAMP := $(VENV)/.dossier-full-$(INSTALL_HASH)
comma := ,
AGENT_RUNTIME := $(if $(wildcard agents/pyproject.toml),-e ./agents)
# torch resolves to the dev pin.
AGENT_FULL := $(if $(wildcard agents/pyproject.toml),-e "./agents[torch$(comma)load]")
PIP_INSTALL := $(BIN)/python -m pip install --disable-pip-version-check
# Stamps of other hashes (and the single stamp of earlier Makefiles) go once a new one is written.
define drop_old_stamps
	find $(VENV) -maxdepth 1 -name '.dossier-*' ! -name '$(notdir $(RUNTIME_STAMP))' ! -name '$(notdir $(FULL_STAMP))' -delete
endef

# Root installs system packages directly; anyone else through sudo.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_GET := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get

.PHONY: help install install-runtime run prepare test system-deps lint messages clean-venv

help:
	@echo "make run       install the server's dependencies if needed, migrate, load the GPU catalog, create the first admin, serve http://$(BIND)/"
	@echo "make test      install the test toolchain and what is missing (Chromium, gettext) and run the whole suite (PYTEST_ARGS=...)"
	@echo "make lint      ruff check"
	@echo "make messages  update and compile the French and Indonesian catalogs"

$(BIN)/python:
	$(PYTHON) -c 'import sys; sys.exit("Dossier needs Python 3.11 or newer" if sys.version_info < (3, 11) else 0)'
	$(PYTHON) -m venv $(VENV)

$(RUNTIME_STAMP): $(INSTALL_INPUTS) | $(BIN)/python
	$(PIP_INSTALL) -e . $(AGENT_RUNTIME)
	$(drop_old_stamps)
	touch $@

# One pip call resolves both packages together; torch is pinned to exactly 2.13.0 in the dev extra, so pip takes the
# local CPU wheel for it.
$(FULL_STAMP): $(INSTALL_INPUTS) | $(BIN)/python
	$(PIP_INSTALL) -e ".[dev]" $(AGENT_FULL)
	$(drop_old_stamps)
	touch $(RUNTIME_STAMP) $@

install-runtime: $(RUNTIME_STAMP)

install: $(FULL_STAMP)

# Everything `make run` does before it starts the processes; safe to repeat.
prepare: install-runtime
	$(MANAGE) migrate --noinput
	$(MANAGE) createcachetable
	$(MANAGE) collectstatic --noinput --verbosity 0
	$(MANAGE) load_catalog
	$(MANAGE) ensure_admin

# scripts/run_procfile.py runs the Procfile with .venv/bin first on PATH (it reads no .env file: the preparation
# steps above and the servers see the same environment). Ctrl-C stops web and worker with SIGTERM, waits up to
# STOP_TIMEOUT seconds, and exits 0 when both stopped cleanly.
run: prepare
	@echo
	@echo "Dossier is starting on http://$(BIND)/"
	@echo "Log in at http://$(BIND)/accounts/login/ as 'admin' (password above when it was just created)."
	@echo "Stop with Ctrl-C."
	@echo
	PATH="$(CURDIR)/$(BIN):$$PATH" DOSSIER_BIND="$(BIND)" DOSSIER_SITE_URL="$${DOSSIER_SITE_URL:-http://$(BIND)}" \
		exec $(BIN)/python scripts/run_procfile.py --procfile Procfile --stop-timeout $(STOP_TIMEOUT)

# Debian's Chromium for the browser tests (Playwright cannot download a browser here), gettext's msgfmt for the
# translation tests and LibreOffice Calc (headless) to recalculate the XLSX export; installed only when absent.
system-deps:
	@missing=""; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	command -v soffice >/dev/null || missing="$$missing libreoffice-calc-nogui"; \
	command -v msgfmt >/dev/null || missing="$$missing gettext"; \
	if [ -n "$$missing" ]; then \
		echo "Installing$$missing with apt-get"; \
		$(APT_GET) update; \
		$(APT_GET) install -y $$missing; \
	fi

test: install system-deps
	@status=0; $(BIN)/pytest $(PYTEST_ARGS) || status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests (PYTEST_ARGS='$(PYTEST_ARGS)')" >&2; fi; \
	exit $$status

lint: install
	$(BIN)/ruff check .

# makemessages in every app that keeps catalogs, and in the project's locale/ (excluding the apps' own strings);
# then compile every catalog.
messages: install
	@for locale_dir in apps/*/locale; do \
		[ -d "$$locale_dir" ] || continue; \
		app_dir=$$(dirname "$$locale_dir"); \
		echo "makemessages in $$app_dir"; \
		(cd "$$app_dir" && env -u DJANGO_SETTINGS_MODULE "$(CURDIR)/$(BIN)/django-admin" makemessages -l fr -l id); \
	done
	@if [ -d locale ]; then \
		echo "makemessages in the project"; \
		$(BIN)/django-admin makemessages -l fr -l id \
			-i apps -i agents -i bench -i var -i tests -i docs -i staticfiles; \
	fi
	$(BIN)/django-admin compilemessages -i .venv -i var -i node_modules

clean-venv:
	rm -rf $(VENV)
