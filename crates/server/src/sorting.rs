//! The limits a database puts on sorted searches (server-side sorting and virtual list views) and
//! the sorted lists a connection keeps open between requests (a paged sort's later pages, a VLV
//! context), each counted against those limits.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The sort and VLV request controls of a search as the client sent them: criticality and value.
#[derive(Debug, Clone, Default)]
pub struct SortControls {
    pub sort: Option<(bool, Option<Vec<u8>>)>,
    pub vlv: Option<(bool, Option<Vec<u8>>)>,
}

impl SortControls {
    /// Whether either control is critical.
    pub fn critical(&self) -> bool {
        [&self.sort, &self.vlv]
            .into_iter()
            .any(|c| c.as_ref().is_some_and(|(critical, _)| *critical))
    }
}

/// How many sorted searches a database allows, as slapd's sssvlv settings say.
#[derive(Debug)]
pub struct SortPolicy {
    /// Sorted lists open at once on the whole server (`sssvlv-max`).
    pub max: usize,
    /// Keys in one sort request (`sssvlv-maxkeys`).
    pub max_keys: usize,
    /// Sorted lists one connection keeps open at once (`sssvlv-maxperconn`).
    pub max_per_conn: usize,
    open: AtomicUsize,
}

impl SortPolicy {
    pub fn new(max: usize, max_keys: usize, max_per_conn: usize) -> SortPolicy {
        SortPolicy {
            max,
            max_keys,
            max_per_conn,
            open: AtomicUsize::new(0),
        }
    }

    /// Sorted lists open now on the whole server.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }
}

/// One candidate of a sorted search: where it is (the part of the search, for a search across
/// glued databases, and its entry ID) and its sort keys, encoded by the search's key encoder. This,
/// and never the entry, is what a sorted search keeps per candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sorted {
    pub part: u32,
    pub id: u64,
    pub keys: Box<[u8]>,
}

/// The candidates of a sorted search, in their sorted order.
#[derive(Debug, Default)]
pub struct SortedList {
    pub entries: Vec<Sorted>,
}

impl SortedList {
    /// Bytes this list holds on the heap: the memory a sorted search costs, per candidate its
    /// [`Sorted`] and its keys.
    pub fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Sorted>()
            + self.entries.iter().map(|s| s.keys.len()).sum::<usize>()
    }
}

/// Why a sorted list kept open between requests is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// The next pages of a paged sorted search.
    Paged,
    /// A virtual list view's context.
    Vlv,
    /// A sorted search still searching or sending: counted while it runs, as slapd counts it.
    Running,
}

/// A sorted list a connection keeps open, counted against its database's policy until dropped.
struct Open {
    id: u64,
    held: Held,
    list: Arc<SortedList>,
    /// Where a paged list's next page starts.
    position: usize,
    policy: Arc<SortPolicy>,
}

impl Drop for Open {
    fn drop(&mut self) {
        self.policy.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The sorted lists one connection keeps open (dropped with the connection).
#[derive(Default)]
pub struct SortSessions {
    open: Mutex<Vec<Open>>,
    next: AtomicU64,
}

/// A sorted search that could not start: the connection or the server holds as many sorted lists
/// as its policy allows.
#[derive(Debug, PartialEq, Eq)]
pub struct Busy;

impl SortSessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Open>> {
        // A panic while holding the list leaves nothing half-changed: the list is usable as is.
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The open list `id` of kind `held`, if the connection still keeps it, and where its next
    /// page starts.
    pub fn find(&self, id: u64, held: Held) -> Option<(Arc<SortedList>, usize)> {
        self.lock()
            .iter()
            .find(|o| o.id == id && o.held == held)
            .map(|o| (Arc::clone(&o.list), o.position))
    }

    /// Records where the next page of the open list `id` starts.
    pub fn set_position(&self, id: u64, position: usize) {
        if let Some(open) = self.lock().iter_mut().find(|o| o.id == id) {
            open.position = position;
        }
    }

    /// A new sorted search under `policy`, counted from now until it ends or keeps its list.
    pub fn start<'s>(&'s self, policy: &'s Arc<SortPolicy>) -> Result<Started<'s>, Busy> {
        let id = self.keep(policy, Held::Running, Arc::default(), None)?;
        Ok(Started {
            sessions: self,
            policy,
            id: Some(id),
        })
    }

    /// Keeps `list` open under `policy`; its id (for a cookie or a context). `replacing`: an open
    /// list this one takes the place of (a VLV context searched again).
    pub fn keep(
        &self,
        policy: &Arc<SortPolicy>,
        held: Held,
        list: Arc<SortedList>,
        replacing: Option<u64>,
    ) -> Result<u64, Busy> {
        let mut open = self.lock();
        if let Some(old) = replacing {
            open.retain(|o| o.id != old);
        }
        if open.len() >= policy.max_per_conn || policy.open() >= policy.max {
            return Err(Busy);
        }
        policy.open.fetch_add(1, Ordering::Relaxed);
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        open.push(Open {
            id,
            held,
            list,
            position: 0,
            policy: Arc::clone(policy),
        });
        Ok(id)
    }

    /// Closes the open list `id` (the last page was sent, or the client abandoned the paging).
    pub fn close(&self, id: u64) {
        self.lock().retain(|o| o.id != id);
    }
}

/// A sorted search that is running ([`SortSessions::start`]): its place is given back when it is
/// dropped, unless it keeps its list open.
pub struct Started<'s> {
    sessions: &'s SortSessions,
    policy: &'s Arc<SortPolicy>,
    id: Option<u64>,
}

impl Started<'_> {
    /// Keeps `list` open in the search's place; its id.
    pub fn keep(mut self, held: Held, list: Arc<SortedList>) -> Result<u64, Busy> {
        self.sessions.keep(self.policy, held, list, self.id.take())
    }
}

impl Drop for Started<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.sessions.close(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_counted_per_connection_and_per_server() {
        let policy = Arc::new(SortPolicy::new(3, 5, 2));
        let (one, two) = (SortSessions::default(), SortSessions::default());
        let list = Arc::new(SortedList::default());
        let a = one.keep(&policy, Held::Vlv, list.clone(), None).unwrap();
        let b = one.keep(&policy, Held::Paged, list.clone(), None).unwrap();
        assert_ne!(a, b);
        assert!(one.start(&policy).is_err(), "two per connection");
        assert_eq!(one.keep(&policy, Held::Vlv, list.clone(), None), Err(Busy));
        // Replacing a context frees its place first.
        let c = one.keep(&policy, Held::Vlv, list.clone(), Some(a)).unwrap();
        assert!(one.find(a, Held::Vlv).is_none());
        assert!(one.find(c, Held::Vlv).is_some());
        assert!(one.find(c, Held::Paged).is_none(), "kinds are apart");
        two.keep(&policy, Held::Vlv, list.clone(), None).unwrap();
        assert!(two.start(&policy).is_err(), "three on the server");
        one.close(b);
        assert_eq!(policy.open(), 2);
        drop(one);
        assert_eq!(policy.open(), 1, "a connection's lists close with it");
        // A running search counts until it ends, or keeps its list in its place.
        let running = two.start(&policy).unwrap();
        assert_eq!(policy.open(), 2);
        drop(running);
        assert_eq!(policy.open(), 1);
        let kept = two.start(&policy).unwrap().keep(Held::Paged, list).unwrap();
        assert_eq!(policy.open(), 2);
        assert!(two.find(kept, Held::Paged).is_some());
    }
}
