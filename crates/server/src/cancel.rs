//! A connection's outstanding operations as Abandon and Cancel (RFC 3909) reach them: each one's
//! stop flag, and the Cancel waiting for its end, answered as slapd answers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use canopy_proto::{ExtendedResponse, LdapResult, ProtocolOp, ResultCode};
use tokio::sync::oneshot;

use crate::completion::Completion;
use crate::ops::encode;
use crate::out::Responses;

/// One outstanding operation: a search that outlived its dispatch, or an update, compare or
/// extended operation still running.
pub struct Running {
    /// Set by Abandon, Cancel and the connection's end; a search stops at its next check.
    stop: Arc<AtomicBool>,
    /// Whether the operation is a search, which stops when asked; the others run to their end.
    stoppable: bool,
    /// The Cancel waiting for the operation's end, with the answer it gets.
    cancel: Option<oneshot::Sender<ResultCode>>,
}

/// The outstanding operations of one connection, by message ID.
#[derive(Clone, Default)]
pub struct Pending(Arc<Mutex<HashMap<i32, Running>>>);

/// An operation's registration: what it gives back to [`Pending::finish`] when it ends.
pub struct Registration {
    id: i32,
    stop: Arc<AtomicBool>,
}

/// How a registered operation ended, for a Cancel waiting on it.
pub enum Ending {
    /// It stopped on its stop flag before its answer (a search, a sync search's persist phase
    /// included): it answers `canceled`, the Cancel success.
    Stopped,
    /// It sent its answer: the Cancel is too late.
    Answered,
}

impl Pending {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i32, Running>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers the operation `id` (`stoppable` for a search). None when the ID is already
    /// outstanding (a client reusing it): that one stays the one Abandon and Cancel reach.
    pub fn register(&self, id: i32, stoppable: bool) -> Option<Registration> {
        let mut map = self.lock();
        if map.contains_key(&id) {
            return None;
        }
        let stop = Arc::new(AtomicBool::new(false));
        map.insert(
            id,
            Running {
                stop: Arc::clone(&stop),
                stoppable,
                cancel: None,
            },
        );
        Some(Registration { id, stop })
    }

    /// Registers a search with `stop`, the flag it already checks.
    pub fn register_search(&self, id: i32, stop: Arc<AtomicBool>) -> Registration {
        self.lock().insert(
            id,
            Running {
                stop: Arc::clone(&stop),
                stoppable: true,
                cancel: None,
            },
        );
        Registration { id, stop }
    }

    /// RFC 4511 §4.11 Abandon: the operation stops (a search) and is no longer outstanding.
    pub fn abandon(&self, id: i32) {
        if let Some(running) = self.lock().remove(&id) {
            running.stop.store(true, Ordering::Relaxed);
        }
    }

    /// The connection ends: every operation stops.
    pub fn stop_all(&self) {
        for running in self.lock().values() {
            running.stop.store(true, Ordering::Relaxed);
        }
    }

    /// Whether a Cancel waits on the operation of `registration`.
    pub fn canceling(&self, registration: &Registration) -> bool {
        self.lock()
            .get(&registration.id)
            .is_some_and(|r| Arc::ptr_eq(&r.stop, &registration.stop) && r.cancel.is_some())
    }

    /// The operation of `registration` ended as `ending` and is no longer outstanding; a Cancel
    /// waiting on it gets its answer.
    pub fn finish(&self, registration: Registration, ending: Ending) {
        let mut map = self.lock();
        let ours = map
            .get(&registration.id)
            .is_some_and(|r| Arc::ptr_eq(&r.stop, &registration.stop));
        let Some(running) = ours.then(|| map.remove(&registration.id)).flatten() else {
            return;
        };
        drop(map);
        if let Some(cancel) = running.cancel {
            let answer = match ending {
                Ending::Stopped => ResultCode::Success,
                Ending::Answered => ResultCode::TooLate,
            };
            let _ = cancel.send(answer);
        }
    }

    /// RFC 3909 Cancel of the operation `target`, asked by the request `id`: answered at once when
    /// nothing can be canceled, else once the target has ended (after its own answer).
    pub fn cancel(&self, id: i32, target: i32, tx: Responses, completion: Option<Completion>) {
        let answer = move |code: ResultCode, text: &str| {
            let response = ExtendedResponse {
                result: LdapResult::new(code, text),
                name: None,
                value: None,
            };
            encode(id, ProtocolOp::ExtendedResponse(response), Vec::new())
        };
        let waiting = {
            let mut map = self.lock();
            match map.get_mut(&target) {
                // slapd finds the Cancel itself among the operations and answers success.
                _ if target == id => Reply::Now(ResultCode::Success),
                None => Reply::Now(ResultCode::NoSuchOperation),
                Some(running) if running.cancel.is_some() => Reply::Now(ResultCode::TooLate),
                Some(running) => {
                    let (sender, receiver) = oneshot::channel();
                    running.cancel = Some(sender);
                    if running.stoppable {
                        running.stop.store(true, Ordering::Relaxed);
                    }
                    Reply::After(receiver)
                }
            }
        };
        tokio::spawn(async move {
            let code = match waiting {
                Reply::After(receiver) => match receiver.await {
                    Ok(code) => code,
                    // The connection ended first: nobody to answer.
                    Err(_) => return,
                },
                Reply::Now(code) => code,
            };
            let text = match code {
                ResultCode::NoSuchOperation => "message ID not found",
                _ => "",
            };
            let _ = tx.send(answer(code, text)).await;
            if let Some(c) = completion {
                c.done(Some(code), 0, 0);
            }
        });
    }
}

/// When a Cancel is answered.
enum Reply {
    Now(ResultCode),
    /// Once its target has ended, with the code it sends.
    After(oneshot::Receiver<ResultCode>),
}

/// The SearchResultDone of a search a Cancel stopped.
pub fn canceled_search(id: i32) -> Vec<u8> {
    encode(
        id,
        ProtocolOp::SearchResultDone(LdapResult::new(ResultCode::Canceled, "")),
        Vec::new(),
    )
}
