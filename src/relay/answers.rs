//! The frames the proxy itself sends the client: answers to the client frames a
//! [`FrameHandler`](super::handler::FrameHandler) took, written through the client's outlet
//! (so they never interleave with a relayed frame) and logged `p2c`.
//!
//! An answer that takes work ([`Answer`]) runs on a small pool of worker threads
//! ([`WORKERS`] at most, started as needed), in the order the calls came, each once the tap
//! has logged every frame relayed before its call: an injected tool then sees the tool
//! results the client saw before asking.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::handler::Answer;
use super::outlet::Outlet;
use super::stats::RelayStats;
use super::tap::TapSender;
use crate::framelog::Direction;
use crate::sync::lock;

/// The most worker threads answering at once. Answers of the injected tools take a lock on
/// the store each, so more threads would only wait.
pub(crate) const WORKERS: usize = 4;

/// The longest an answer waits for the tap to log what was relayed before its call. The
/// tap is usually milliseconds behind; on a loaded machine, right after start (while the
/// tokenizer loads), it can be seconds behind, and an answer built without the frames the
/// client has already seen would be wrong rather than late.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(30);

/// An answer waiting for a worker, and the place in the relay order of the call it answers.
struct Job {
    order: u64,
    answer: Answer,
}

#[derive(Default)]
struct Pool {
    queue: VecDeque<Job>,
    /// Worker threads started and not ended.
    threads: usize,
    /// Of those, the ones waiting for a job.
    idle: usize,
    /// Jobs queued or running.
    unfinished: usize,
    /// Of those, the ones writing their answer (they count themselves if it fails).
    sending: usize,
    /// Of those, the ones waiting for the tap to catch up (bounded by [`CATCH_UP_LIMIT`]).
    catching_up: usize,
    /// No more jobs: workers end when the queue is empty.
    closed: bool,
}

/// Writes the proxy's own frames to the client; runs the answers that take work.
pub(crate) struct Answers {
    to_client: Arc<Outlet>,
    tap: TapSender,
    stats: Arc<RelayStats>,
    delay: Duration,
    pool: Mutex<Pool>,
    changed: Condvar,
}

impl std::fmt::Debug for Answers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answers")
            .field("delay", &self.delay)
            .finish_non_exhaustive()
    }
}

impl Answers {
    /// Answers written through `to_client` (the `s2c` pump's outlet), logged through
    /// `tap`, and counted in `stats` when they cannot be delivered. `delay` holds every
    /// answer that takes work back that long (for tests of cancellation; zero otherwise).
    pub(crate) fn new(
        to_client: Arc<Outlet>,
        tap: TapSender,
        stats: Arc<RelayStats>,
        delay: Duration,
    ) -> Answers {
        Answers {
            to_client,
            tap,
            stats,
            delay,
            pool: Mutex::new(Pool::default()),
            changed: Condvar::new(),
        }
    }

    /// Sends one message (without line ending) to the client and logs it `p2c`; counts it
    /// as undelivered when the client's outlet is closed or broke.
    pub(crate) fn answer_now(&self, message: Vec<u8>) {
        if !self.send(message) {
            self.stats.undelivered_answers(1);
        }
    }

    /// Sends one message and logs it `p2c`; `false` when the client's outlet is closed or
    /// broke.
    fn send(&self, message: Vec<u8>) -> bool {
        let mut bytes = message;
        bytes.push(b'\n');
        let mut writer = self.to_client.lock();
        let ticket = self.tap.ticket_writing(&writer);
        let written = writer.write(&bytes).unwrap_or(false);
        drop(writer);
        if written {
            self.tap.relayed(ticket, Direction::P2c, bytes);
        } else {
            self.tap.not_relayed(ticket, Direction::P2c);
        }
        written
    }

    /// Runs `answer` on a worker and sends what it returns; `order` is the place in the
    /// relay order of the frame it answers. Without any worker (none could be started) it
    /// runs here.
    pub(crate) fn later(self: &Arc<Self>, order: u64, answer: Answer) {
        let job = Job { order, answer };
        let mut pool = lock(&self.pool);
        if pool.idle == 0 && pool.threads < WORKERS {
            let this = Arc::clone(self);
            let started = std::thread::Builder::new()
                .name("injected-call".into())
                .spawn(move || this.work());
            match started {
                Ok(_) => pool.threads += 1,
                Err(_) if pool.threads == 0 => {
                    drop(pool);
                    self.run(job);
                    return;
                }
                Err(_) => {}
            }
        }
        pool.unfinished += 1;
        pool.queue.push_back(job);
        drop(pool);
        self.changed.notify_all();
    }

    /// A worker: runs jobs until the pool is closed and empty.
    fn work(&self) {
        let mut pool = lock(&self.pool);
        loop {
            if let Some(job) = pool.queue.pop_front() {
                drop(pool);
                self.run(job);
                pool = lock(&self.pool);
                pool.unfinished -= 1;
                self.changed.notify_all();
            } else if pool.closed {
                pool.threads -= 1;
                return;
            } else {
                pool.idle += 1;
                pool = self
                    .changed
                    .wait(pool)
                    .unwrap_or_else(PoisonError::into_inner);
                pool.idle -= 1;
            }
        }
    }

    fn run(&self, job: Job) {
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        lock(&self.pool).catching_up += 1;
        self.tap.wait_processed(job.order, CATCH_UP_LIMIT);
        lock(&self.pool).catching_up -= 1;
        self.changed.notify_all();
        let Some(message) = (job.answer)() else {
            return;
        };
        {
            let mut pool = lock(&self.pool);
            if pool.closed {
                // Too late: [`Answers::finish`] counted it.
                return;
            }
            pool.sending += 1;
        }
        let sent = self.send(message);
        lock(&self.pool).sending -= 1;
        if !sent {
            self.stats.undelivered_answers(1);
        }
    }

    /// Waits until every answer is written, so that a client that closes its end after
    /// asking still gets them all, giving up only when none was finished for `limit` while
    /// none was waiting for the tap. Then
    /// closes the client's outlet, which the `s2c` pump leaves open for these answers.
    /// Answers given up on are counted as undelivered.
    pub(crate) fn finish(&self, limit: Duration) {
        let mut pool = lock(&self.pool);
        let mut last = (pool.unfinished, Instant::now());
        while pool.unfinished > 0 {
            // An answer waiting for the tap (slow on a loaded machine) is under way too.
            if pool.unfinished < last.0 || pool.catching_up > 0 {
                last = (pool.unfinished, Instant::now());
            }
            let left = limit.saturating_sub(last.1.elapsed());
            if left.is_zero() {
                break;
            }
            pool = self
                .changed
                .wait_timeout(pool, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        pool.closed = true;
        // Queued and running answers will not be sent (a running one that is writing
        // already counts itself if that fails).
        let dropped = (pool.unfinished - pool.sending) as u64;
        pool.queue.clear();
        drop(pool);
        self.stats.undelivered_answers(dropped);
        self.changed.notify_all();
        self.to_client.close();
    }
}
