# kinspect itself in a container, for hosts that cannot reach the lab's containers (Docker
# Desktop on macOS and Windows runs them in a VM): kinspect/cli/container_relay.py runs the
# user's command in it, on the lab's network, with the Docker socket and the user's folders.
#
# Built by `kinspect lab images` (kinspect/lab/images.py) on our Kafka image, which already has
# Java 17 (Spark's post-mortem, Kafka's tools), tini, iproute2 and iptables. The build context
# holds wheels only: deps/ (every dependency, downloaded on the host for CPython 3.11 on
# manylinux x86_64, or built there when a project ships only pure-Python sources) and app/ (a
# wheel of kinspect made from the repository). Nothing is fetched from a Python index here.
ARG BASE
FROM ${BASE} AS python

# Debian bookworm's Python is 3.11, the version the wheels were chosen for.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 python3-venv \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /opt/kinspect

# The dependencies are installed in a stage of their own: the image gets the installed
# packages, not the wheels they came in (pyspark's alone is 450 MB).
FROM python AS deps
COPY deps/ /tmp/deps/
RUN /opt/kinspect/bin/pip install -q --no-index --no-deps /tmp/deps/*.whl

# kinspect last: a change to kinspect's code rebuilds one small layer.
FROM python
COPY --from=deps /opt/kinspect/ /opt/kinspect/
COPY app/ /tmp/app/
RUN /opt/kinspect/bin/pip install -q --no-index --no-deps /tmp/app/*.whl \
 && /opt/kinspect/bin/pip check && rm -rf /tmp/app

ARG KINSPECT_VERSION
LABEL org.opencontainers.image.title="kinspect" \
      org.opencontainers.image.version="${KINSPECT_VERSION}" \
      kinspect.image="kinspect"
# KINSPECT_IN_CONTAINER: a command run here never relays itself again.
ENV PATH=/opt/kinspect/bin:$PATH KINSPECT_IN_CONTAINER=1 HOME=/tmp LANG=C.UTF-8 \
    TINI_SUBREAPER=1
ENTRYPOINT ["tini", "--", "kinspect"]
