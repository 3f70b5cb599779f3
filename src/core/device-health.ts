// A device's health as its reports and the API carry it: a leaf that imports nothing (the dashboard's type-check reads it).

/** A device's health as the agent saw it when it decided a status; every field optional (a board may lack one). */
export interface DeviceHealth {
  /** Seconds since the device booted. */
  uptimeS?: number;
  /** The 1-minute load average. */
  load1?: number;
  /** Bytes of memory available (MemAvailable). */
  memFreeBytes?: number;
  /** Bytes free on the file system of the state directory. */
  diskFreeBytes?: number;
  /** Degrees Celsius of the first thermal zone, where /sys/class/thermal has one. */
  tempC?: number;
}
