"""A small OTLP/HTTP receiver for the export tests, on the official generated protobuf classes.

Listens on 127.0.0.1 (an ephemeral port), decodes every POST to /v1/traces or /v1/metrics
with opentelemetry-proto's ExportTraceServiceRequest / ExportMetricsServiceRequest, and prints
one JSON line per request on stdout: {"path", "headers", "body"}, the body as protobuf's JSON
mapping with snake_case field names and trace/span ids in lowercase hex. The first line is
{"port": N}.

    otlp_receiver.py [--status CODE] [--delay SECONDS]

--status answers every request with CODE (after decoding it) instead of 200; --delay holds
each answer back that long (a slow collector). Ends when stdin closes.
"""

import argparse
import base64
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

MESSAGES = {
    "/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
    "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse),
}
ID_FIELDS = {"trace_id", "span_id", "parent_span_id"}
out_lock = threading.Lock()


def hex_ids(value):
    """The JSON mapping writes bytes as base64; ids read better (and compare) as hex."""
    if isinstance(value, dict):
        return {
            k: (base64.b64decode(v).hex() if k in ID_FIELDS else hex_ids(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [hex_ids(v) for v in value]
    return value


def emit(record):
    with out_lock:
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()


def make_handler(status, delay):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            kinds = MESSAGES.get(self.path)
            if kinds is None:
                self.send_error(404)
                return
            if self.headers.get("Content-Type") != "application/x-protobuf":
                self.send_error(415)
                return
            request_type, response_type = kinds
            message = request_type()
            message.ParseFromString(body)
            emit({
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": hex_ids(MessageToDict(message, preserving_proto_field_name=True)),
            })
            if delay:
                time.sleep(delay)
            answer = response_type().SerializeToString()
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    return Handler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--status", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(args.status, args.delay))
    server.daemon_threads = True
    emit({"port": server.server_address[1]})
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
