// Stands in for optional native deps of dockerode's ssh transport, unused over a unix socket (device bundle only).
module.exports = {};
