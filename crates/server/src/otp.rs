//! The otp overlay's part in the frontend: a simple bind of a user with an OATH token gives its
//! credentials to the overlay (`canopy_directory::overlay::otp`), which checks and uses up the one-time
//! code at their end; the rest is checked as the password.

use std::sync::Arc;

use canopy_core::LdapError;
use canopy_directory::overlay::otp::Otp;
use canopy_schema::NormDn;

use crate::databases::{Database, FrontHook, Pending};

pub struct OtpHook(pub Arc<Otp>);

impl FrontHook for OtpHook {
    fn bind_password<'a>(
        &'a self,
        dir: &'a Database,
        ndn: &'a NormDn,
        credentials: &'a [u8],
    ) -> Pending<'a, Result<Option<Vec<u8>>, LdapError>> {
        Box::pin(self.0.check(dir.backend(), ndn, credentials))
    }
}
