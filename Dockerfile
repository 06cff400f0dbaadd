# Dossier's server image: gunicorn, the Celery worker and beat all run from it (see docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=config.settings \
    DOSSIER_VAR_DIR=/data \
    DOSSIER_STATIC_ROOT=/app/staticfiles

WORKDIR /app

# The server's exact pins first, in a layer that changes only with pyproject.toml. No dev extra: no torch, no
# test tools in production.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

COPY . .

# The server imports only the agent package's pure metrics module (stdlib and numpy, which pandas brings), so the
# package goes in without its dependencies: those are for the GPU nodes.
RUN if [ -f agents/pyproject.toml ]; then pip install --no-deps ./agents; fi \
    && DOSSIER_VAR_DIR=/tmp/build-var python manage.py collectstatic --noinput --verbosity 0 \
    && rm -rf /tmp/build-var \
    && useradd --system --uid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin dossier \
    && mkdir -p /data \
    && chown dossier:dossier /data

USER dossier
VOLUME ["/data"]
EXPOSE 8000

CMD ["gunicorn", "config.wsgi", "--bind", "0.0.0.0:8000", "--worker-class", "gthread", "--workers", "3", \
     "--threads", "4", "--timeout", "60", "--access-logfile", "-", "--no-control-socket"]
