# Strata in a from-scratch image: a static binary (and strata-proxy), no shell.
#   docker build -t strata .
#   docker run -p 9092:9092 -p 9644:9644 -v strata-data:/var/lib/strata strata \
#     --override advertised.listeners=PLAINTEXT://localhost:9092
# docker-compose.yml at the root runs it beside Apache Kafka.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/strata ./cmd/strata \
 && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/strata-proxy ./cmd/strata-proxy \
 && mkdir -p /out/data

FROM scratch
COPY --from=build /out/strata /out/strata-proxy /usr/local/bin/
COPY --from=build --chown=65532:65532 /out/data /var/lib/strata
USER 65532:65532
VOLUME /var/lib/strata
# 9092 Kafka protocol, 9644 /metrics and /healthz.
EXPOSE 9092 9644
ENTRYPOINT ["/usr/local/bin/strata", \
  "--override", "listeners=PLAINTEXT://0.0.0.0:9092", \
  "--override", "log.dirs=/var/lib/strata", \
  "--override", "metrics.listener=http://0.0.0.0:9644"]
