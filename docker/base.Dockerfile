# The base every chaoskit image builds on. BASE_IMAGE is python:3.11-slim-bookworm where a registry
# is reachable; without one, docker/bootstrap-base.sh makes a Debian base locally and
# `chaoskit images build` passes it here. Whatever the base lacks (venv, a JRE, ZooKeeper) comes
# from Debian packages, installed only when missing, so the bootstrap base needs no network.
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}
RUN set -e; need=""; \
    python3 -c 'import venv, ensurepip' 2>/dev/null || need="$need python3-venv"; \
    command -v java >/dev/null 2>&1 || need="$need default-jre-headless"; \
    [ -f /usr/share/java/zookeeper.jar ] || need="$need zookeeper"; \
    [ -f /usr/share/java/slf4j-simple.jar ] || need="$need libslf4j-java"; \
    if [ -n "$need" ]; then \
      apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need; \
      rm -rf /var/lib/apt/lists/*; \
    fi; \
    mkdir -p /home/chaoskit /data; chown 10001:10001 /home/chaoskit /data
# every chaoskit process runs as this unprivileged uid (no passwd entry needed)
ENV HOME=/home/chaoskit LANG=C.UTF-8 PYTHONUNBUFFERED=1
WORKDIR /home/chaoskit
