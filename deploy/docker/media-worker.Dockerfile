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
# Optional dependencies stay: the native modules arrive as optional packages.
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
WORKDIR /app
ENV NODE_ENV=production
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
