//! [`ThreadRandom`]: the secure generator behind a guest's `wasi:random`.
//!
//! wasmtime-wasi gives each context a ChaCha generator of its own, seeded
//! when the context is made: 320 bytes that every teammate holds for as
//! long as it lives, idle or not, to serve calls most teammates never make.
//! [`ThreadRandom`] holds nothing; each call draws from the calling thread's
//! generator (`rand::rng()`: ChaCha, seeded from the operating system and
//! reseeded as it goes), which is as secure, and about as fast. A generator
//! that asked the operating system per call would not be: wasmtime-wasi
//! draws a guest's `get-random-bytes` one call per byte, and a guest asking
//! for the most it may at once (64 MiB) would hold a runtime worker through
//! ~67 million system calls, 20 s and more.

use std::convert::Infallible;

use rand::{Rng as _, TryCryptoRng, TryRng};

/// The calling thread's generator, asked anew at each call: no state of
/// its own, `Send`, and as secure as `rand::rng()`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ThreadRandom;

impl TryRng for ThreadRandom {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(rand::rng().next_u32())
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(rand::rng().next_u64())
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        rand::rng().fill_bytes(dst);
        Ok(())
    }
}

impl TryCryptoRng for ThreadRandom {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_draws_differ_and_fill_every_byte() {
        let mut r = ThreadRandom;
        let (a, b) = (r.next_u64(), r.next_u64());
        assert_ne!(a, b, "the same 64 bits twice");
        // 4 KiB all zero would be a generator that did not write.
        let mut buf = vec![0u8; 4096];
        r.fill_bytes(&mut buf);
        assert!(buf.iter().any(|&x| x != 0));
        assert_eq!(std::mem::size_of::<ThreadRandom>(), 0);
    }
}
