//! A capture written off the caller's thread: the lab's delay line holds
//! packets to microseconds and must never wait on a disk. The caller
//! copies each frame into a buffer taken from a fixed pool and hands it
//! over through a bounded queue; a thread of its own writes the file and
//! returns the buffer. Nothing is allocated per packet and nothing
//! blocks: when every buffer is in the queue (the writer fell behind),
//! the frame is not kept and is counted as dropped, and the capture's
//! outcome says how many were.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::writer::Writer;

/// Frames that may wait for the writer: at the lab's 1500-byte MTU, about
/// 40 ms at 1 Gbit/s.
pub const DEPTH: usize = 4096;

struct Frame {
    t_ns: u64,
    orig_len: u32,
    data: Vec<u8>,
}

/// What a capture kept and what it could not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Frames written to the file.
    pub written: u64,
    /// Frames seen but not kept: the writer had fallen [`DEPTH`] frames
    /// behind, or the file could no longer be written.
    pub dropped: u64,
}

/// The caller's end of a capture written on its own thread.
pub struct Background {
    frames: SyncSender<Frame>,
    free: Receiver<Vec<u8>>,
    /// Shared with the writer, which records it in a pcapng file's
    /// statistics once the caller is done.
    dropped: Arc<AtomicU64>,
    thread: Option<JoinHandle<io::Result<u64>>>,
}

impl Background {
    /// Starts the writer thread for `writer`, with [`DEPTH`] buffers of
    /// `frame_bytes` each (the longest frame that will be kept).
    pub fn start(writer: Writer, frame_bytes: usize) -> io::Result<Background> {
        let (frames, incoming) = sync_channel::<Frame>(DEPTH);
        let (give_back, free) = sync_channel::<Vec<u8>>(DEPTH);
        for _ in 0..DEPTH {
            give_back
                .send(Vec::with_capacity(frame_bytes))
                .expect("the pool's receiver is here");
        }
        let dropped = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&dropped);
        let thread = std::thread::Builder::new()
            .name("kr-capture".into())
            .spawn(move || write_all(writer, incoming, give_back, &counted))?;
        Ok(Background {
            frames,
            free,
            dropped,
            thread: Some(thread),
        })
    }

    /// Keeps the frame made of `head` then `rest` (at most `keep` bytes
    /// of it), seen at `t_ns`, `orig_len` bytes on the wire; never blocks.
    /// False if it was dropped.
    pub fn offer(
        &mut self,
        t_ns: u64,
        head: &[u8],
        rest: &[u8],
        keep: usize,
        orig_len: u32,
    ) -> bool {
        let mut data = match self.free.try_recv() {
            Ok(buf) => buf,
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return false;
            }
        };
        data.clear();
        let from_head = head.len().min(keep);
        data.extend_from_slice(&head[..from_head]);
        data.extend_from_slice(&rest[..rest.len().min(keep - from_head)]);
        let frame = Frame {
            t_ns,
            orig_len,
            data,
        };
        // The queue holds as many frames as there are buffers, so a
        // buffer in hand always has room; a writer that is gone (its file
        // failed) takes nothing more.
        if self.frames.try_send(frame).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Frames dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Waits for the writer to write what it was given and close the file
    /// (pcapng records the drops in it).
    pub fn finish(mut self) -> io::Result<Outcome> {
        let dropped = Arc::clone(&self.dropped);
        let thread = self.thread.take().expect("finished once");
        drop(self);
        let written = thread
            .join()
            .map_err(|_| io::Error::other("the capture's writer thread panicked"))??;
        Ok(Outcome {
            written,
            dropped: dropped.load(Ordering::Relaxed),
        })
    }
}

/// The writer thread: every frame into the file, each buffer back into
/// the pool. Ends when the caller's end is dropped (its count of drops is
/// then final); returns the frames written, or the first error (after
/// which it only drains the queue, so that the caller never waits).
fn write_all(
    mut writer: Writer,
    incoming: Receiver<Frame>,
    give_back: SyncSender<Vec<u8>>,
    dropped: &AtomicU64,
) -> io::Result<u64> {
    let mut written = 0;
    let mut failed = None;
    for f in incoming {
        if failed.is_none() {
            match writer.write(f.t_ns, &f.data, f.orig_len) {
                Ok(()) => written += 1,
                Err(e) => failed = Some(e),
            }
        }
        // The pool holds every buffer there is, so it has room.
        let _ = give_back.try_send(f.data);
    }
    if let Some(e) = failed {
        return Err(e);
    }
    writer.finish(dropped.load(Ordering::Relaxed))?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{CaptureSpec, End};

    #[test]
    fn frames_arrive_in_order_and_a_full_queue_drops_instead_of_waiting() {
        let dir = std::env::temp_dir().join(format!("kr-capture-bg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.pcap");
        let spec = CaptureSpec::at(End::Left);
        let w = Writer::create(&path, &spec, "test").unwrap();
        let mut bg = Background::start(w, 64).unwrap();
        let mut kept = 0;
        for i in 0..(3 * DEPTH as u64) {
            kept += bg.offer(i, &[1; 14], &[2; 100], 64, 114) as u64;
        }
        let out = bg.finish().unwrap();
        assert_eq!(out.written, kept);
        assert_eq!(out.written + out.dropped, 3 * DEPTH as u64);
        // At least the pool's worth was kept; the file holds exactly those.
        assert!(out.written >= DEPTH as u64, "{out:?}");
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len() as u64, 24 + out.written * (16 + 64));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
