# The fault proxy (a server of Toxiproxy's HTTP API): the node image with the proxy as its command.
ARG BASE
FROM ${BASE}
EXPOSE 8474
ENTRYPOINT ["python", "-m", "chaoskit.proxy"]
CMD ["--host", "0.0.0.0", "--port", "8474"]
