//! back-monitor's schema (OpenLDAP's names and OIDs, slapd registers them built in), and back-mdb's
//! database figures, so filters and attribute selection on cn=Monitor work as monitoring scripts expect.

/// OpenLDAP `.schema` text: attribute types first, then object classes.
pub const MONITOR_SCHEMA: &str = "
attributetype ( 1.3.6.1.4.1.4203.666.1.10 NAME 'monitorContext' DESC 'monitor context'
  EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12
  SINGLE-VALUE NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.1 NAME 'monitoredInfo' DESC 'monitored info'
  EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch
  SYNTAX 1.3.6.1.4.1.1466.115.121.1.15{32768} NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.2 NAME 'managedInfo' DESC 'monitor managed info' SUP name )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.3 NAME 'monitorCounter' DESC 'monitor counter'
  EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27
  NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.4 NAME 'monitorOpCompleted' DESC 'monitor completed operations'
  SUP monitorCounter NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.5 NAME 'monitorOpInitiated' DESC 'monitor initiated operations'
  SUP monitorCounter NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.6 NAME 'monitorConnectionNumber' DESC 'monitor connection number'
  SUP monitorCounter NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.7 NAME 'monitorConnectionAuthzDN'
  DESC 'monitor connection authorization DN' EQUALITY distinguishedNameMatch
  SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.8 NAME 'monitorConnectionLocalAddress'
  DESC 'monitor connection local address' SUP monitoredInfo NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.9 NAME 'monitorConnectionPeerAddress'
  DESC 'monitor connection peer address' SUP monitoredInfo NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.10 NAME 'monitorTimestamp' DESC 'monitor timestamp'
  EQUALITY generalizedTimeMatch ORDERING generalizedTimeOrderingMatch
  SYNTAX 1.3.6.1.4.1.1466.115.121.1.24 SINGLE-VALUE NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.11 NAME 'monitorOverlay'
  DESC 'name of overlays defined for a given database' SUP monitoredInfo
  NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.12 NAME 'readOnly' DESC 'read/write status of a given database'
  EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.13 NAME 'restrictedOperation'
  DESC 'name of restricted operation for a given database' SUP managedInfo )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.14 NAME 'monitorConnectionProtocol'
  DESC 'monitor connection protocol' SUP monitoredInfo NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.15 NAME 'monitorConnectionOpsReceived'
  DESC 'monitor number of operations received by the connection' SUP monitorCounter
  NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.16 NAME 'monitorConnectionOpsExecuting'
  DESC 'monitor number of operations in execution within the connection' SUP monitorCounter
  NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.17 NAME 'monitorConnectionOpsPending'
  DESC 'monitor number of pending operations within the connection' SUP monitorCounter
  NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.18 NAME 'monitorConnectionOpsCompleted'
  DESC 'monitor number of operations completed within the connection' SUP monitorCounter
  NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.23 NAME 'monitorConnectionListener'
  DESC 'monitor connection listener' SUP monitoredInfo NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.25 NAME 'monitorConnectionStartTime'
  DESC 'monitor connection start time' SUP monitorTimestamp SINGLE-VALUE
  NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.26 NAME 'monitorConnectionActivityTime'
  DESC 'monitor connection activity time' SUP monitorTimestamp SINGLE-VALUE
  NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.27 NAME 'monitorIsShadow' DESC 'TRUE if the database is shadow'
  EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.29 NAME 'monitorRuntimeConfig'
  DESC 'TRUE if component allows runtime configuration' EQUALITY booleanMatch
  SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.0.1.1 NAME 'olmDbDirectory'
  DESC 'Path name of the directory where the database environment resides' SUP monitoredInfo
  NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.0.1.1.1 NAME 'olmMDBPagesMax' DESC 'Maximum number of pages'
  SUP monitorCounter NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.0.1.1.2 NAME 'olmMDBPagesUsed' DESC 'Number of pages in use'
  SUP monitorCounter NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.0.1.1.4 NAME 'olmMDBReadersMax' DESC 'Maximum number of readers'
  SUP monitorCounter NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.0.1.1.5 NAME 'olmMDBReadersUsed'
  DESC 'Number of readers in use' SUP monitorCounter NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.666.1.55.0.1.1.6 NAME 'olmMDBEntries' DESC 'Number of entries in DB'
  SUP monitorCounter NO-USER-MODIFICATION USAGE dSAOperation )
objectclass ( 1.3.6.1.4.1.4203.666.3.16.1 NAME 'monitor' DESC 'OpenLDAP system monitoring'
  SUP top STRUCTURAL MUST cn
  MAY ( description $ seeAlso $ labeledURI $ monitoredInfo $ managedInfo $ monitorOverlay ) )
objectclass ( 1.3.6.1.4.1.4203.666.3.16.2 NAME 'monitorServer' DESC 'Server monitoring root entry'
  SUP monitor STRUCTURAL )
objectclass ( 1.3.6.1.4.1.4203.666.3.16.3 NAME 'monitorContainer' DESC 'monitor container class'
  SUP monitor STRUCTURAL )
objectclass ( 1.3.6.1.4.1.4203.666.3.16.4 NAME 'monitorCounterObject' DESC 'monitor counter class'
  SUP monitor STRUCTURAL )
objectclass ( 1.3.6.1.4.1.4203.666.3.16.5 NAME 'monitorOperation' DESC 'monitor operation class'
  SUP monitor STRUCTURAL )
objectclass ( 1.3.6.1.4.1.4203.666.3.16.6 NAME 'monitorConnection' DESC 'monitor connection class'
  SUP monitor STRUCTURAL )
objectclass ( 1.3.6.1.4.1.4203.666.3.16.7 NAME 'managedObject' DESC 'monitor managed entity class'
  SUP monitor STRUCTURAL )
objectclass ( 1.3.6.1.4.1.4203.666.3.16.8 NAME 'monitoredObject' DESC 'monitor monitored entity class'
  SUP monitor STRUCTURAL )
objectclass ( 1.3.6.1.4.1.4203.666.3.16.0.1.1.2 NAME 'olmMDBDatabase' SUP top AUXILIARY
  MAY ( olmDbDirectory $ olmMDBPagesMax $ olmMDBPagesUsed $ olmMDBReadersMax $ olmMDBReadersUsed $
  olmMDBEntries ) )
";
