//! What a frontend hook that answers a search request control on each entry by reading other
//! entries works with (slapd's deref overlay): the answer it prepares once per search
//! (`EntryAnswer`), and the search's reading of other entries as its requester may
//! (`EntryReading`, supplied by the search).

use canopy_core::wire::StoredEntry;
use canopy_core::LdapError;
use canopy_proto::Control;

/// Attributes read from an entry: each name with the values read.
pub type ReadAttributes = Vec<(String, Vec<Vec<u8>>)>;

/// The reads of a search on behalf of its requester, in the search's snapshot.
pub trait EntryReading {
    /// Whether the requester may read the attribute `desc` (a schema name) of the entry being sent.
    fn reads_here(&self, desc: &str) -> bool;

    /// The attributes `names` (schema names, in their order; a name given twice is read twice) of
    /// the entry the DN `value` names, as the requester may read them: those it holds and the
    /// requester may read, each with the values it may read. Empty when the DN names no entry, or
    /// one the requester may not read.
    fn follow(&mut self, value: &[u8], names: &[String]) -> Result<ReadAttributes, LdapError>;
}

/// A hook's answer to a request control, prepared once for a search: the response control of each
/// entry it sends.
pub trait EntryAnswer {
    /// The response control for the search result entry `shown`; None for no control.
    fn control(
        &self,
        shown: &StoredEntry<'_>,
        reading: &mut dyn EntryReading,
    ) -> Result<Option<Control>, LdapError>;
}
