import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import { join } from 'node:path'

/** The account Litestream logs in as; it gets nothing but an authorized key. */
export const SFTP_USER = 'lsrepl'
const SSHD = '/usr/sbin/sshd'

export interface Sshd {
  port: number
  /** The client's private key, for REPLICA_CONFIG's `key-path`. */
  key: string
  /** A fresh directory in the user's home for the replica. */
  home: string
  stop(): void
}

/** Why this machine cannot run the sftp test (not root), or null. A missing sshd is a failure instead. */
export function sftpUnavailable(): string | null {
  return process.getuid?.() === 0 ? null : 'needs root: it starts an sshd of its own and creates the user lsrepl'
}

/** A port nothing listens on now. */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/**
 * Debian's sshd on 127.0.0.1, apart from the system's: its own config, host key, pid and port,
 * key authentication only, for one user, with the internal sftp server. Needs root (sshd, useradd).
 */
export async function startSshd(dir: string): Promise<Sshd> {
  if (!existsSync(SSHD)) throw new Error(`${SSHD} is missing: apt-get install openssh-server (.ci/run does)`)
  const run = (command: string, ...args: string[]) => execFileSync(command, args, { stdio: 'pipe' })
  try {
    run('id', SFTP_USER)
  } catch {
    run('useradd', '-m', '-s', '/bin/sh', SFTP_USER)
  }
  // No password, but not locked either: with UsePAM no, sshd refuses a locked account.
  run('usermod', '-p', '*', SFTP_USER)
  const key = join(dir, 'client_key')
  run('ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'host_key'))
  run('ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', key)
  const userHome = `/home/${SFTP_USER}`
  const { uid, gid } = idsOf(SFTP_USER)
  mkdirSync(`${userHome}/.ssh`, { recursive: true, mode: 0o700 })
  run('cp', `${key}.pub`, `${userHome}/.ssh/authorized_keys`)
  chownSync(`${userHome}/.ssh`, uid, gid)
  chownSync(`${userHome}/.ssh/authorized_keys`, uid, gid)
  const home = `${userHome}/drill-${process.pid}-${Date.now()}`
  mkdirSync(home)
  chownSync(home, uid, gid)
  mkdirSync('/run/sshd', { recursive: true })
  const port = await freePort()
  const config = join(dir, 'sshd_config')
  writeFileSync(
    config,
    [
      'ListenAddress 127.0.0.1',
      `Port ${port}`,
      `HostKey ${join(dir, 'host_key')}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PubkeyAuthentication yes',
      'AuthorizedKeysFile .ssh/authorized_keys',
      'UsePAM no',
      `AllowUsers ${SFTP_USER}`,
      'Subsystem sftp internal-sftp',
      '',
    ].join('\n'),
  )
  const sshd: ChildProcess = spawn(SSHD, ['-D', '-f', config, '-E', join(dir, 'sshd.log')], { stdio: 'ignore' })
  await listening(port, sshd)
  return {
    port,
    key,
    home,
    stop: () => {
      sshd.kill('SIGTERM')
      execFileSync('rm', ['-rf', home])
    },
  }
}

function idsOf(user: string): { uid: number; gid: number } {
  const [uid, gid] = ['-u', '-g'].map((flag) => Number(execFileSync('id', [flag, user], { encoding: 'utf8' }).trim()))
  return { uid: uid as number, gid: gid as number }
}

async function listening(port: number, sshd: ChildProcess): Promise<void> {
  for (;;) {
    if (sshd.exitCode !== null) throw new Error(`sshd ended with ${sshd.exitCode}`)
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => resolve(socket.destroy() === socket))
      socket.once('error', () => resolve(false))
    })
    if (ok) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
