//! A bare libtracer link: WRITE out, DELIVERY back, driven from the link's reader thread as the
//! raw client drives its socket.

use std::path::Path;
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtracer_core::link::{HostTransport, Link, LinkHandler};
use libtracer_core::wire::Frame;
use libtracer_core::Meta;
use parking_lot::{Condvar, Mutex};

use crate::child;
use crate::measure::Run;

/// Child: answer every WRITE with a DELIVERY carrying the same payload; exit when the link goes.
struct Echo {
    gone: Mutex<bool>,
    cv: Condvar,
}

impl LinkHandler for Echo {
    fn on_up(&self, _link: Arc<dyn Link>) {}
    fn on_frame(&self, link: &Arc<dyn Link>, frame: Frame) {
        if let Frame::Write { meta, payload, .. } = frame {
            let _ = link.send(&Frame::Delivery {
                edge: 1,
                meta,
                suffix: None,
                payload,
            });
        }
    }
    fn on_down(&self, _link: &Arc<dyn Link>) {
        *self.gone.lock() = true;
        self.cv.notify_all();
    }
}

pub fn child(dir: &Path) {
    let echo = Arc::new(Echo {
        gone: Mutex::new(false),
        cv: Condvar::new(),
    });
    let _t = HostTransport::start(dir, "echo", echo.clone()).expect("child transport");
    let mut gone = echo.gone.lock();
    while !*gone {
        echo.cv.wait(&mut gone);
    }
}

/// Parent: on each DELIVERY, take the time and send the next WRITE, from the reader thread.
struct Driver {
    link: Mutex<Option<Arc<dyn Link>>>,
    run: Mutex<Run>,
    cv: Condvar,
}

impl Driver {
    fn send_next(&self, link: &Arc<dyn Link>, run: &mut Run) {
        run.t0 = Some(Instant::now());
        let f = Frame::Write {
            req: 0,
            path: "/echo".into(),
            meta: Meta::default(),
            payload: run.payload.clone(),
        };
        link.send(&f).expect("link send");
    }
}

impl LinkHandler for Driver {
    fn on_up(&self, link: Arc<dyn Link>) {
        *self.link.lock() = Some(link);
        self.cv.notify_all();
    }
    fn on_frame(&self, link: &Arc<dyn Link>, frame: Frame) {
        let Frame::Delivery { payload, .. } = frame else {
            return;
        };
        let now = Instant::now();
        let mut run = self.run.lock();
        if run.arrived(payload.len(), now) {
            self.send_next(link, &mut run);
        } else {
            self.cv.notify_all();
        }
    }
    fn on_down(&self, _link: &Arc<dyn Link>) {
        *self.link.lock() = None;
        let mut run = self.run.lock();
        run.done = true;
        self.cv.notify_all();
    }
}

/// The link side: this process's transport, linked to the echo child.
pub struct LinkPing {
    child: Child,
    transport: Option<HostTransport>,
    driver: Arc<Driver>,
    link: Arc<dyn Link>,
}

impl LinkPing {
    pub fn start(dir: &Path) -> LinkPing {
        let child = child::spawn("link", dir);
        child::wait_for_file(&dir.join("echo.sock"));
        let driver = Arc::new(Driver {
            link: Mutex::new(None),
            run: Mutex::new(Run::default()),
            cv: Condvar::new(),
        });
        let transport =
            HostTransport::start(dir, "bench", driver.clone()).expect("parent transport");
        let link = {
            let mut l = driver.link.lock();
            let deadline = Instant::now() + Duration::from_secs(10);
            while l.is_none() {
                assert!(
                    !driver.cv.wait_until(&mut l, deadline).timed_out(),
                    "no link to the echo child"
                );
            }
            l.clone().expect("link")
        };
        LinkPing {
            child,
            transport: Some(transport),
            driver,
            link,
        }
    }

    pub fn run(&mut self, size: usize, n: usize, samples: &mut Vec<u64>) {
        let mut run = self.driver.run.lock();
        *run = run.next(size, n);
        self.driver.send_next(&self.link, &mut run);
        Run::finish(&mut run, &self.driver.cv, samples);
    }

    pub fn stop(mut self) {
        drop(self.transport.take());
        let _ = self.child.wait();
    }
}
