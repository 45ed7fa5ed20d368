# One image, two static binaries: `manager` runs the operator, `crawler`
# runs in crawler Pods (the Pod spec sets the command).
# `make image` builds the same image without Docker: hack/image reads this
# file (the build stage's `go build -o` lines, the final stage's COPY --from,
# USER and ENTRYPOINT) and refuses anything else in the final stage, so the
# two cannot drift. The binaries carry their own CA roots (cmd/*/roots.go).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY crawler/ crawler/
COPY index/ index/
COPY internal/ internal/
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -ldflags="-s -w" -o /out/manager ./cmd/manager \
 && CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -ldflags="-s -w" -o /out/crawler ./cmd/crawler

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/manager /out/crawler /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["manager"]
