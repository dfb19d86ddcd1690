//! Empty: this crate only pins the luau0-src dependency.
