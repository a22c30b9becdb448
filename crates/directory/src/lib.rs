//! The backend: everything about one database on LMDB, below the LDAP frontend of `canopy-server`.
//!
//! It owns base lookup, alias and referral resolution, candidate planning and the candidate scan,
//! computed attributes and the write path with its ordered chain of hooks (`pipeline`). It is the only
//! place that opens LMDB transactions for the server (`Directory::read`, `Directory::write`), and it hands
//! them out as its own types ([`Snapshot`], [`InWrite`], bound by [`View`]), so that the frontend names no
//! storage type; offline tools and tests reach the store itself through [`Directory::store`].
//!
//! It must never: know who is asking beyond what a [`write::Guard`] decides, encode a response for a
//! client, read the configuration file, or run on an async runtime other than to await a write's commit.

pub mod alias;
pub mod attrcsn;
pub mod candidates;
pub mod context;
mod database;
pub mod dynlist;
pub mod error;
pub mod event;
pub mod feed;
mod figures;
mod find;
pub mod inchain;
mod indexes;
pub mod indexing;
mod keys;
pub mod opattrs;
pub mod overlay;
pub mod referral;
pub mod replica;
pub mod search;
pub mod search_loop;
pub mod syncprov;
pub mod usage;
pub mod verify;
mod view;
pub mod write;

pub use database::pipeline;
pub use database::pipeline::{OnReplica, Pipeline, WriteHook};
pub use database::{Checked, Directory, OpenError, OpenOptions};
pub use error::{store_error, OpError, Referral};
pub use event::{after_commit, Event, Kind, Origin, Proposed};
pub use figures::{Distribution, Figures};
pub use indexing::{IndexError, IndexState, IndexStatus};
pub use keys::dn_key;
pub use opattrs::Stamp;
pub use replica::{Applied, ReplicaBatch, ReplicaChange};
pub use syncprov::{LogRecord, LogReplay};
pub use usage::Usage;
pub use view::{InWrite, Snapshot, View};
pub use write::{
    structural, Action, BatchError, Guard, ModifyDn, Unrestricted, WriteOp, WriteRequest,
};
