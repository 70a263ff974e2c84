//! The remote client (to be written).
