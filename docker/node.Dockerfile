# The chaoskit node: broker and controller (and the proxy image builds on it). The project and its
# run-time dependencies come as wheels in the build context (deps/, project/) (`chaoskit images build` makes them on
# the host), so the build needs no index: pip installs with --no-index into a venv.
ARG BASE
FROM ${BASE}
# dependencies first: their layer stays in the engine's build cache while only the project changes
COPY requirements.txt /tmp/requirements.txt
COPY deps/ /tmp/deps/
RUN python3 -m venv /opt/chaoskit \
 && /opt/chaoskit/bin/pip install -q --no-index --find-links /tmp/deps -r /tmp/requirements.txt \
 && rm -rf /tmp/deps /home/chaoskit/.cache
COPY project/ /tmp/project/
RUN /opt/chaoskit/bin/pip install -q --no-index --no-deps /tmp/project/chaoskit-*.whl \
 && rm -rf /tmp/project /home/chaoskit/.cache
ENV PATH=/opt/chaoskit/bin:$PATH
USER 10001:10001
EXPOSE 9092
# chaoskit writes the node's config to /home/chaoskit/node.json before each start
ENTRYPOINT ["python", "-m"]
CMD ["chaoskit.broker", "--config", "/home/chaoskit/node.json"]
