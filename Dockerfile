# locify-server in two stages: the Swift 6 toolchain image builds the release binary (the Swift
# runtime linked in statically), a slim Debian image runs it as a non-root user with the shared
# libraries it needs (libpq5, libssl3 for libssl and libcrypto), the SQL
# migrations it applies at start and the openapi.yaml it serves.
#
#   docker build -t locify-server .
#   docker compose up          # with PostgreSQL, see docker-compose.yml

# ---- build ------------------------------------------------------------------------------------
FROM swift:6.3-bookworm AS build
# The system libraries the CLibPQ, CLibCrypto and CLibSSL targets link (found through pkg-config).
RUN apt-get update \
    && apt-get install -y --no-install-recommends libpq-dev libssl-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Dependencies first, so editing the sources does not refetch them: the manifest alone resolves,
# within the version requirements Package.swift states (Package.resolved is not tracked: a pin made
# on one machine may name a commit id that exists nowhere else, and pinning it would fail the build).
COPY Package.swift ./
RUN swift package resolve
# Then the whole build context: .dockerignore alone decides what is left out, so every folder the
# manifest names (Sources, Tests, Fuzz, ...) is there without a list to keep in step with it.
# scripts/check-image replays this stage on the host (CI has no Docker engine): keep its RUN
# commands free of absolute paths, so they run the same inside WORKDIR there.
COPY . .
RUN swift build -c release --static-swift-stdlib --product locify-server \
    && install -D "$(swift build -c release --show-bin-path)/locify-server" out/locify-server

# ---- run ----------------------------------------------------------------------------------------
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends libpq5 libssl3 libstdc++6 ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /app --no-create-home locify
WORKDIR /app
COPY --from=build /src/out/locify-server /app/locify-server
COPY migrations /app/migrations
COPY openapi.yaml /app/openapi.yaml
USER locify:locify
# Listen on every interface inside the container (the server's own default is 127.0.0.1).
ENV HOST=0.0.0.0 \
    PORT=8080 \
    LOCIFY_MIGRATIONS_DIR=/app/migrations
EXPOSE 8080
# SIGTERM drains in-flight requests (LOCIFY_SHUTDOWN_GRACE_SECONDS) and exits 0.
STOPSIGNAL SIGTERM
# Ready means the database answers: the binary probes its own /health/ready (no curl in the image).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["/app/locify-server", "healthcheck"]
ENTRYPOINT ["/app/locify-server"]
CMD ["serve"]
