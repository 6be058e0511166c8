//! The proxy's adapters to the relay: [`ingest_sink::IngestSink`] (a
//! [`FrameSink`](crate::relay::FrameSink): the tap hands it every frame, it stores tool
//! results) and [`intercept::Interceptor`] (a [`FrameHandler`](crate::relay::FrameHandler):
//! it extends `tools/list` results and answers calls to injected tools).

pub mod ingest_sink;
pub mod intercept;
