// Node `ws` echo server for side-by-side benchmarks (Debian's node-ws). Prints `listening PORT`.
// Loopback only; exits when stdin closes (unless WSLOAD_NO_STDIN is set: then the caller kills it).
const WebSocket = require('/usr/share/nodejs/ws');
const server = new WebSocket.Server({ host: '127.0.0.1', port: 0, perMessageDeflate: false, maxPayload: 16 * 1024 * 1024 });
server.on('connection', (socket) => {
  socket.on('message', (data, isBinary) => socket.send(data, { binary: isBinary }));
});
server.on('listening', () => console.log(`listening ${server.address().port}`));
if (!process.env.WSLOAD_NO_STDIN) {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.resume();
}
