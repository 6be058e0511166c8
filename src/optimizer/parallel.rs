//! Mapping over a slice on several threads, results in input order: the output never
//! depends on the thread count.

/// Below this many items, mapping stays on the calling thread.
const MIN_PARALLEL: usize = 64;

/// The thread count to use: `requested`, or (0) the machine's parallelism, at most 8.
pub(crate) fn thread_count(requested: usize) -> usize {
    match requested {
        0 => std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8),
        n => n,
    }
}

/// `items.iter().map(f).collect()`, split into contiguous parts on `threads` threads.
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
        let handles: Vec<_> = items
            .chunks(size)
            .map(|part| scope.spawn(move || part.iter().map(f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| match h.join() {
                Ok(part) => part,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
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
}
