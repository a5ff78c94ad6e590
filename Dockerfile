# bindy-agent: small, non-root, no build tools in the final image.
# Build: docker build -t ghcr.io/bindy-gitops/bindy-agent:<pyproject version> .  (README, "Install"); deploy/ runs it.
# Also a CI image: its entrypoint is bindy-agent (`docker run --rm -v "$PWD:/repo" -w /repo IMAGE plan dns/`);
# a CI job whose script is a shell script sets the entrypoint to "" (GitLab: image: {name: ..., entrypoint: [""]}).

FROM python:3.11.7-slim-bookworm AS build
# the commit `bindy-agent version` names (the build context has no .git):
#   docker build --build-arg BINDY_AGENT_BUILD_COMMIT="$(git rev-parse HEAD)" .
ARG BINDY_AGENT_BUILD_COMMIT=unknown
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY agent ./agent
RUN BINDY_AGENT_BUILD_COMMIT="$BINDY_AGENT_BUILD_COMMIT" pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11.7-slim-bookworm
# git is what GitPython drives; ca-certificates for HTTPS remotes; openssh-client for deploy keys.
# safe.directory '*': as a CI image, bindy-agent reads a checkout another user owns (the runner's);
# the agent's own clones are its own anyway
RUN apt-get update \
    && apt-get install -y --no-install-recommends git=1:2.39.* openssh-client=1:9.2* ca-certificates=2023* \
    && rm -rf /var/lib/apt/lists/* \
    && git config --system --add safe.directory '*' \
    && useradd --uid 10001 --home-dir /tmp --no-create-home --shell /usr/sbin/nologin bindy
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-compile /wheels/*.whl && rm -rf /wheels
ENV HOME=/tmp PYTHONUNBUFFERED=1
USER 10001
EXPOSE 8080
ENTRYPOINT ["bindy-agent"]
CMD ["run"]
