//! The threads that carry client requests to the server: each request runs at once on a
//! thread of its own, as many as are under way (a slow call never holds up the next one, nor
//! its cancellation), and a thread whose request is done waits a while for the next one
//! instead of ending, so that a client making calls one after another reuses one thread
//! rather than starting a thread per call (docs/http.md has the figures).

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use crate::sync::lock;

/// How long an idle thread waits for a request before it ends.
const IDLE: Duration = Duration::from_secs(30);

/// One request's work.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// A thread waiting for a job.
struct Idle {
    id: u64,
    jobs: mpsc::Sender<Job>,
}

/// Runs jobs at once, each on an idle thread or else a new one.
#[derive(Default)]
pub(crate) struct Workers {
    idle: Arc<Mutex<Vec<Idle>>>,
    started: AtomicU64,
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workers")
            .field("idle", &lock(&self.idle).len())
            .field("started", &self.started)
            .finish()
    }
}

impl Workers {
    /// Runs `job` now, on the thread that became idle last (its caches are the warmest) or on
    /// a new thread named `name`. Fails only when no thread can be started.
    pub(crate) fn run(&self, name: &str, job: Job) -> io::Result<()> {
        let idle = lock(&self.idle).pop();
        let job = match idle {
            // A thread on the list is waiting for a job, and no other is sent it.
            Some(worker) => match worker.jobs.send(job) {
                Ok(()) => return Ok(()),
                Err(mpsc::SendError(job)) => job,
            },
            None => job,
        };
        let id = self.started.fetch_add(1, Ordering::Relaxed);
        let idle = self.idle.clone();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || work(id, &idle, job))?;
        Ok(())
    }

    /// How many threads were started.
    #[cfg(test)]
    fn started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }
}

/// A thread's life: `job`, then each job it is given while it waits no longer than [`IDLE`].
fn work(id: u64, idle: &Mutex<Vec<Idle>>, mut job: Job) {
    let (sender, jobs) = mpsc::channel();
    loop {
        job();
        lock(idle).push(Idle {
            id,
            jobs: sender.clone(),
        });
        job = match jobs.recv_timeout(IDLE) {
            Ok(next) => next,
            Err(_) => {
                let mut list = lock(idle);
                match list.iter().position(|w| w.id == id) {
                    Some(i) => {
                        list.remove(i);
                        return;
                    }
                    // Taken off the list meanwhile: its job is on the way.
                    None => {
                        drop(list);
                        match jobs.recv() {
                            Ok(next) => next,
                            Err(_) => return,
                        }
                    }
                }
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread a job ran on, when it ran.
    fn on_a_worker(workers: &Workers) -> std::thread::ThreadId {
        let (tx, rx) = mpsc::channel();
        workers
            .run(
                "test",
                Box::new(move || tx.send(std::thread::current().id()).unwrap()),
            )
            .unwrap();
        rx.recv_timeout(Duration::from_secs(10)).unwrap()
    }

    #[test]
    fn a_job_after_another_reuses_its_thread() {
        let workers = Workers::default();
        let first = on_a_worker(&workers);
        // The first job's thread is on the idle list once it has sent; wait until it is.
        while lock(&workers.idle).is_empty() {
            std::thread::yield_now();
        }
        assert_eq!(on_a_worker(&workers), first);
        assert_eq!(workers.started(), 1);
    }

    #[test]
    fn jobs_under_way_together_each_get_a_thread() {
        let workers = Workers::default();
        let (release, wait) = mpsc::channel::<()>();
        let (blocked, is_blocked) = mpsc::channel();
        workers
            .run(
                "test",
                Box::new(move || {
                    blocked.send(()).unwrap();
                    wait.recv_timeout(Duration::from_secs(10)).unwrap();
                }),
            )
            .unwrap();
        is_blocked.recv_timeout(Duration::from_secs(10)).unwrap();
        // The first job holds its thread until the second one has run: it must run beside it.
        let second = on_a_worker(&workers);
        release.send(()).unwrap();
        assert_ne!(second, std::thread::current().id());
        assert_eq!(workers.started(), 2);
    }
}
