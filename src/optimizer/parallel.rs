//! Mapping over a slice on several threads, results in input order: the output never
//! depends on the thread count.

/// Below this many items, mapping stays on the calling thread.
const MIN_PARALLEL: usize = 64;

/// The thread count to use: `requested`, or (0) the machine's parallelism, at most 8 (read
/// once per process: it reads the cgroup's CPU quota from files each time).
pub(crate) fn thread_count(requested: usize) -> usize {
    static MACHINE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    match requested {
        0 => *MACHINE.get_or_init(|| {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(8)
        }),
        n => n,
    }
}

/// `items.iter().map(f).collect()`, split into contiguous parts on `threads` threads: the
/// calling thread maps the first part (its thread-local caches, the tokenizer's among them,
/// serve every call), new threads the others.
pub(crate) fn par_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let threads = thread_count(threads);
    if threads <= 1 || items.len() < MIN_PARALLEL {
        return items.iter().map(f).collect();
    }
    let size = items.len().div_ceil(threads);
    let f = &f;
    std::thread::scope(|scope| {
        let mut parts = items.chunks(size);
        let first = parts.next().unwrap_or_default();
        let handles: Vec<_> = parts
            .map(|part| scope.spawn(move || part.iter().map(f).collect::<Vec<R>>()))
            .collect();
        let mut out: Vec<R> = Vec::with_capacity(items.len());
        out.extend(first.iter().map(f));
        for h in handles {
            match h.join() {
                Ok(part) => out.extend(part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_and_results_do_not_depend_on_threads() {
        let items: Vec<u64> = (0..1000).collect();
        let one = par_map(&items, 1, |x| x * x);
        assert_eq!(one, par_map(&items, 3, |x| x * x));
        assert_eq!(one, par_map(&items, 8, |x| x * x));
        assert_eq!(one[999], 998_001);
    }

    #[test]
    fn the_calling_thread_maps_the_first_part() {
        let items: Vec<u64> = (0..1000).collect();
        let here = std::thread::current().id();
        let ids = par_map(&items, 4, |_| std::thread::current().id());
        assert_eq!(ids[0], here);
        assert_eq!(ids[249], here);
        assert_ne!(ids[250], here);
        assert_ne!(ids[999], here);
    }
}
