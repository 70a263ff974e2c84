//! wf-http
