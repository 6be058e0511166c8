//! The exporter: a bounded queue and one thread that batches spans and POSTs them.
//!
//! [`Exporter::offer`] never blocks: when the queue is full (the collector is slow or down)
//! the span is dropped and counted. [`Exporter::send`] waits for room instead (for
//! `ctxopt export`, which has nothing else to do). A batch the collector does not take (no
//! connection, a timeout, a status other than 2xx) is dropped and counted too: there are no
//! retries, so a collector that is down costs one failed request per batch and nothing else.
//!
//! The HTTP client exists only on the exporter thread, and that thread only connects when it
//! has something to send.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use opentelemetry_proto::tonic::metrics::v1::Metric;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::Span;

use super::config::{ExportConfig, Target};
use super::{encode, OtelError};

use crate::sync::lock;

enum Job {
    Span(Box<Span>),
    Metrics(Vec<Metric>),
}

/// What the exporter did, for the log trailer and stderr.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportReport {
    /// Spans handed to the exporter.
    pub offered: u64,
    /// Spans a collector accepted (a 2xx answer).
    pub sent: u64,
    /// Spans dropped: queue full, a request that failed, or still unsent when time ran out.
    pub dropped: u64,
    /// The first reason a span was dropped.
    pub(crate) first_error: Option<String>,
    /// Metric exports that failed, and the first reason.
    pub(crate) metrics_failed: Option<String>,
}

impl ExportReport {
    /// One line for the trailer's `errors` and stderr, when something was lost.
    pub fn problem(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.dropped > 0 {
            parts.push(format!(
                "{} of {} spans dropped (first: {})",
                self.dropped,
                self.offered,
                self.first_error.as_deref().unwrap_or("unknown")
            ));
        }
        if let Some(reason) = &self.metrics_failed {
            parts.push(format!("metrics not exported: {reason}"));
        }
        (!parts.is_empty()).then(|| format!("otlp export: {}", parts.join("; ")))
    }
}

#[derive(Debug, Default)]
struct Shared {
    offered: AtomicU64,
    sent: AtomicU64,
    dropped: AtomicU64,
    first_error: Mutex<Option<String>>,
    metrics_failed: Mutex<Option<String>>,
}

impl Shared {
    fn drop_spans(&self, n: u64, reason: impl FnOnce() -> String) {
        if n == 0 {
            return;
        }
        self.dropped.fetch_add(n, Ordering::Relaxed);
        let mut first = lock(&self.first_error);
        first.get_or_insert_with(reason);
    }

    /// Keeps the first reason a metrics export failed.
    fn fail_metrics(&self, reason: impl FnOnce() -> String) {
        let mut failed = lock(&self.metrics_failed);
        failed.get_or_insert_with(reason);
    }

    fn report(&self) -> ExportReport {
        let offered = self.offered.load(Ordering::Relaxed);
        let sent = self.sent.load(Ordering::Relaxed);
        let mut report = ExportReport {
            offered,
            sent,
            dropped: self.dropped.load(Ordering::Relaxed),
            first_error: lock(&self.first_error).clone(),
            metrics_failed: lock(&self.metrics_failed).clone(),
        };
        // Whatever is neither sent nor counted yet was still queued or in flight.
        let unconfirmed = offered.saturating_sub(sent + report.dropped);
        if unconfirmed > 0 {
            report.dropped += unconfirmed;
            report.first_error.get_or_insert_with(|| {
                "the collector had not answered when the session ended".into()
            });
        }
        report
    }
}

/// The queue and the exporter thread.
#[derive(Debug)]
pub struct Exporter {
    tx: SyncSender<Job>,
    traces_on: bool,
    shared: Arc<Shared>,
    done: Receiver<()>,
    handle: JoinHandle<()>,
}

impl Exporter {
    /// Starts the exporter thread for `config` (no connection is made until a batch is ready).
    pub fn start(config: &ExportConfig) -> Result<Exporter, OtelError> {
        let (tx, rx) = mpsc::sync_channel(config.queue_capacity);
        let shared = Arc::new(Shared::default());
        let (done_tx, done) = mpsc::channel();
        let worker = Worker {
            traces: config.traces.clone(),
            metrics: config.metrics.clone(),
            resource: encode::resource(&config.resource),
            batch_size: config.batch_size,
            shared: shared.clone(),
        };
        let handle = std::thread::Builder::new()
            .name("otlp-export".into())
            .spawn(move || {
                worker.run(rx);
                let _ = done_tx.send(());
            })
            .map_err(OtelError::Start)?;
        Ok(Exporter {
            tx,
            traces_on: config.traces.is_some(),
            shared,
            done,
            handle,
        })
    }

    /// Queues a span if there is room, else drops and counts it. Never blocks. Spans are
    /// ignored when traces export is off (`OTEL_TRACES_EXPORTER=none`).
    pub(crate) fn offer(&self, span: Span) {
        if !self.traces_on {
            return;
        }
        self.shared.offered.fetch_add(1, Ordering::Relaxed);
        match self.tx.try_send(Job::Span(Box::new(span))) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.shared.drop_spans(1, || {
                "the export queue was full (the collector is slow or down)".into()
            }),
            Err(TrySendError::Disconnected(_)) => self
                .shared
                .drop_spans(1, || "the exporter thread had stopped".into()),
        }
    }

    /// Queues a span, waiting for room (ignored when traces export is off).
    pub fn send(&self, span: Span) {
        if !self.traces_on {
            return;
        }
        self.shared.offered.fetch_add(1, Ordering::Relaxed);
        if self.tx.send(Job::Span(Box::new(span))).is_err() {
            self.shared
                .drop_spans(1, || "the exporter thread had stopped".into());
        }
    }

    /// Queues metrics (after the spans queued before them); when the queue is full they are
    /// not exported and the report says so. Never blocks.
    pub(crate) fn offer_metrics(&self, metrics: Vec<Metric>) {
        if metrics.is_empty() {
            return;
        }
        if self.tx.try_send(Job::Metrics(metrics)).is_err() {
            self.shared
                .fail_metrics(|| "the export queue was full".into());
        }
    }

    /// Queues metrics, waiting for room.
    pub fn send_metrics(&self, metrics: Vec<Metric>) {
        if !metrics.is_empty() && self.tx.send(Job::Metrics(metrics)).is_err() {
            self.shared
                .fail_metrics(|| "the exporter thread had stopped".into());
        }
    }

    /// Closes the queue and waits for the thread to send what is queued, for at most
    /// `limit` (`None`: as long as it takes). Spans still unsent then count as dropped.
    pub fn finish(self, limit: Option<Duration>) -> ExportReport {
        drop(self.tx);
        let finished = match limit {
            Some(limit) => self.done.recv_timeout(limit).is_ok(),
            None => self.done.recv().is_ok(),
        };
        if finished {
            let _ = self.handle.join();
        }
        self.shared.report()
    }
}

/// The exporter thread's state.
struct Worker {
    traces: Option<Target>,
    metrics: Option<Target>,
    resource: Resource,
    batch_size: usize,
    shared: Arc<Shared>,
}

impl Worker {
    fn run(self, rx: Receiver<Job>) {
        let mut agents: Option<(ureq::Agent, ureq::Agent)> = None;
        let mut held: Option<Job> = None;
        loop {
            let Some(first) = held.take().or_else(|| rx.recv().ok()) else {
                return;
            };
            let (traces_agent, metrics_agent) = agents
                .get_or_insert_with(|| (agent(self.traces.as_ref()), agent(self.metrics.as_ref())));
            match first {
                Job::Metrics(metrics) => self.export_metrics(metrics_agent, metrics),
                Job::Span(span) => {
                    let mut batch = vec![*span];
                    while batch.len() < self.batch_size {
                        match rx.try_recv() {
                            Ok(Job::Span(span)) => batch.push(*span),
                            Ok(other) => {
                                held = Some(other);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    self.export_spans(traces_agent, batch);
                }
            }
        }
    }

    fn export_spans(&self, agent: &ureq::Agent, batch: Vec<Span>) {
        let n = batch.len() as u64;
        // The exporter only queues spans when traces export is on.
        let Some(target) = &self.traces else { return };
        match post(agent, target, encode::traces_body(&self.resource, batch)) {
            Ok(()) => {
                self.shared.sent.fetch_add(n, Ordering::Relaxed);
            }
            Err(reason) => self.shared.drop_spans(n, || reason),
        }
    }

    fn export_metrics(&self, agent: &ureq::Agent, metrics: Vec<Metric>) {
        let Some(target) = &self.metrics else { return };
        if let Err(reason) = post(agent, target, encode::metrics_body(&self.resource, metrics)) {
            self.shared.fail_metrics(|| reason);
        }
    }
}

/// An HTTP client with the target's timeout for the whole request.
fn agent(target: Option<&Target>) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(target.map(|t| t.timeout))
        .http_status_as_error(false)
        .build()
        .into()
}

/// POSTs one protobuf body; `Err` names why the collector did not take it.
fn post(agent: &ureq::Agent, target: &Target, body: Vec<u8>) -> Result<(), String> {
    let mut request = agent
        .post(&target.url)
        .header("content-type", "application/x-protobuf");
    for (key, value) in &target.headers {
        request = request.header(key, value);
    }
    match request.send(body) {
        Ok(response) if response.status().is_success() => Ok(()),
        Ok(response) => Err(format!(
            "{} answered HTTP {}",
            target.url,
            response.status()
        )),
        Err(err) => Err(format!("{}: {err}", target.url)),
    }
}
