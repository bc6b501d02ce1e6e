// A Foxglove WebSocket client for test_cli_serve.py, on @foxglove/ws-protocol (the protocol
// library Foxglove Studio uses): connects, waits for TOPIC to be advertised, subscribes and
// prints one JSON line per event: serverInfo, advertise, message (payload as hex), then exits
// after COUNT messages (status 0) or after TIMEOUT seconds (status 1).
//
//   node client.js ws://127.0.0.1:8765 /topic COUNT TIMEOUT
const { FoxgloveClient } = require("@foxglove/ws-protocol");
const WebSocket = require("ws");

const [url, topic, count, timeout] = process.argv.slice(2);
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const ws = new WebSocket(url, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]);
const client = new FoxgloveClient({ ws });
let received = 0;
let subscribed = false;
setTimeout(() => {
  out({ event: "timeout", received });
  process.exit(1);
}, Number(timeout) * 1000);
client.on("error", (e) => out({ event: "error", message: String(e) }));
client.on("serverInfo", (info) => out({ event: "serverInfo", name: info.name, capabilities: info.capabilities }));
client.on("status", (s) => out({ event: "status", level: s.level, message: s.message }));
client.on("advertise", (channels) => {
  out({ event: "advertise", channels });
  const ch = channels.find((c) => c.topic === topic);
  if (ch && !subscribed) {
    subscribed = true;
    out({ event: "subscribe", channelId: ch.id, subscriptionId: client.subscribe(ch.id) });
  }
});
client.on("unadvertise", (ids) => out({ event: "unadvertise", ids }));
client.on("message", ({ subscriptionId, timestamp, data }) => {
  received += 1;
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  out({ event: "message", subscriptionId, timestamp: timestamp.toString(), hex: bytes.toString("hex") });
  if (received >= Number(count)) {
    client.close();
    process.exit(0);
  }
});
