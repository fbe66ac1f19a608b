//! Helpers of the end-to-end tests: the shared fixture of
//! `teamhost_tests::fixture` (a team in a temporary home run by a host, probe
//! requests, event-driven waits) under the names these tests use, and the
//! scripted models (`models`).

#![allow(dead_code)]

pub mod models;

pub use teamhost_tests::fixture::{
    bounded, is_plain, line, next_event, probe_request, protocol_of, turns, until,
    TeamFixture as Fixture, LIMIT,
};
