//! Answers how memtrace talks to an OpenAI-compatible chat endpoint: configuration, a pooled client with retries and tool calls, and a scripted local server to test against.

#![deny(missing_docs)]

pub mod chat;
pub mod client;
pub mod config;
mod error;
pub mod scripted;

pub use chat::{ChatRequest, ChatResponse, FunctionCall, Message, Tool, ToolCall, Usage};
pub use client::{Client, Exchange};
pub use config::{Config, Endpoint, Secret, ToolMode};
pub use error::{LlmError, Result};
